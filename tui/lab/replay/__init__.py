"""`ctxagent replay`: what ctxagent would have sent, and kept, on the user's own Claude Code sessions.

projects.py finds the transcripts where Claude Code keeps them, sessions.py reads them (tolerantly),
run.py replays them through the bench's replay (tui/lab/bench/) one session at a time, report.py and
plot.py say and draw what came out. The command is tui/cli/replay.py.
"""
