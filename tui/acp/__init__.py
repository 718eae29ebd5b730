"""ctxagent over the Agent Client Protocol (`ctxagent acp`): editors and terminal clients such as
Zed and Toad drive a ctxagent session over JSON-RPC on stdio, through the official SDK
(`agent-client-protocol`). server.py is the agent; stream.py and tool_view.py say what a turn
does in ACP's terms; bridge.py carries permission questions and the editor's files between the
turn's thread and the connection; transport.py frames the messages and answers garbage.
"""
