"""`python -m ctxagent.tui.cli`: the command line without the console script (no app)."""

import sys

from ctxagent.tui.cli.main import main

sys.exit(main())
