"""`python -m ctxagent.agent.cli`: the command line without the console script (no app)."""

import sys

from ctxagent.agent.cli.main import main

sys.exit(main())
