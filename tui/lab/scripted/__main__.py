"""`python -m ctxagent.tui.lab.scripted SCRIPT [--port N]`: the loopback model server, as `ctxagent scripted-server`."""

import sys

from ctxagent.tui.lab.scripted.serve import main

sys.exit(main())
