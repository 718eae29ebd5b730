"""`python -m ctxagent.agent.scripted SCRIPT [--port N]`: the loopback model server, as `ctxagent scripted-server`."""

import sys

from ctxagent.agent.cli.scripted import main

sys.exit(main())
