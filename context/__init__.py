"""The context engine: tokens, budget, history log + views, builder, spill/prune/compact, memory, monitor.

Runs without a model, a terminal or a network; imports neither `ctxagent.agent` nor `ctxagent.tui`.
"""
