"""Instruction files: loading the root's, the user's and nested ones (loading.py), and drafting an AGENTS.md (/init: draft.py)."""
