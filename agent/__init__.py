"""The runtime: config, model providers, the agent loop, tools' runner, checkpoints, MCP, sub-agents.

This is the package's face: what the front ends and the lab (`ctxagent.tui`) and a library user import. Each name is
imported on first use (context/floor/lazy.py), so `import ctxagent.agent` loads no SDK.
"""

from typing import TYPE_CHECKING

from ctxagent.context import __version__ as __version__  # the one version (a lazy face: cheap)

_EXPORTS = {
    # the loop and how it is assembled
    "Agent": "ctxagent.agent.loop",
    "AgentParts": "ctxagent.agent.parts",
    "Approver": "ctxagent.agent.parts",
    "create_agent": "ctxagent.agent.factory",
    "warm_sdk": "ctxagent.agent.factory",
    # what the loop tells its front end
    "AgentEvent": "ctxagent.agent.updates",
    "AssistantDelta": "ctxagent.agent.updates",
    "AssistantDone": "ctxagent.agent.updates",
    "CompactionDone": "ctxagent.agent.updates",
    "HandoffDrafted": "ctxagent.agent.updates",
    "ContextBuilt": "ctxagent.agent.updates",
    "ModelWaiting": "ctxagent.agent.updates",
    "Notice": "ctxagent.agent.updates",
    "McpStatus": "ctxagent.agent.updates",
    "PermissionDecision": "ctxagent.agent.updates",
    "PermissionRequest": "ctxagent.agent.updates",
    "StepStarted": "ctxagent.agent.updates",
    "ToolFinished": "ctxagent.agent.updates",
    "ToolStarted": "ctxagent.agent.updates",
    "TurnFinished": "ctxagent.agent.updates",
    "TurnStarted": "ctxagent.agent.updates",
    "SubAgentUpdate": "ctxagent.agent.updates",
    # sub-agents (the task tool)
    "ChildRow": "ctxagent.agent.subagents.report",
    "child_rows": "ctxagent.agent.subagents.report",
    "open_child_log": "ctxagent.agent.subagents.report",
    "DIRECT_CALL_PREFIX": "ctxagent.agent.user_tools",
    "pasted_image": "ctxagent.agent.user_tools",
    # configuration and trust
    "Config": "ctxagent.agent.config",
    "flags_from_args": "ctxagent.agent.config",
    "load_config": "ctxagent.agent.config",
    "decline": "ctxagent.agent.trust",
    "describe_ignored": "ctxagent.agent.trust",
    "describe_untrusted": "ctxagent.agent.trust",
    "needs_prompt": "ctxagent.agent.trust",
    "read_trusted_files": "ctxagent.agent.trust",
    "trust_repo": "ctxagent.agent.trust",
    # permission modes (plan mode: Shift+Tab in the app)
    "PLAN_MODE": "ctxagent.agent.permissions",
    "next_mode": "ctxagent.agent.permissions",
    # instruction files (the user's, the root's, nested ones)
    "instruction_sections": "ctxagent.agent.instructions.loading",
    "InitDraft": "ctxagent.agent.instructions.draft",
    "init_draft": "ctxagent.agent.instructions.draft",
    "init_prompt": "ctxagent.agent.instructions.draft",
    "write_agents_md": "ctxagent.agent.instructions.draft",
    # custom slash commands (prompt templates)
    "CustomCommand": "ctxagent.agent.custom_commands",
    "confirm_commands": "ctxagent.agent.custom_commands",
    "confirmation": "ctxagent.agent.custom_commands",
    "confirmation_text": "ctxagent.agent.custom_commands",
    "expand_command": "ctxagent.agent.custom_commands",
    "load_commands": "ctxagent.agent.custom_commands",
    "template_ref": "ctxagent.agent.custom_commands",
    # sessions and what a user does to them
    "Session": "ctxagent.agent.session",
    "find_repo_root": "ctxagent.agent.session",
    "list_sessions": "ctxagent.agent.session",
    "open_session": "ctxagent.agent.session",
    "with_session_model": "ctxagent.agent.session",
    "with_session_mode": "ctxagent.agent.session",
    "record_mode": "ctxagent.agent.session",
    "describe_rewind": "ctxagent.agent.checkpoints.rewind",
    "find_user_turn": "ctxagent.agent.checkpoints.rewind",
    "REWIND_MODES": "ctxagent.agent.checkpoints.rewind",
    "RewindMode": "ctxagent.agent.checkpoints.rewind",
    "open_handoff": "ctxagent.agent.session_ops",
    "switch_model": "ctxagent.agent.session_ops",
    "TurnInfo": "ctxagent.agent.checkpoints.turns",
    # git conveniences: /diff and /commit
    "SessionChanges": "ctxagent.agent.checkpoints.session_changes",
    "commit_changes": "ctxagent.agent.checkpoints.session_changes",
    "draft_message": "ctxagent.agent.checkpoints.session_changes",
    "session_changes": "ctxagent.agent.checkpoints.session_changes",
    # models
    "cost_usd": "ctxagent.agent.providers.registry",
    "SessionCost": "ctxagent.agent.providers.pricing",
    "call_cost": "ctxagent.agent.providers.pricing",
    "model_calls": "ctxagent.agent.providers.pricing",
    "session_cost": "ctxagent.agent.providers.pricing",
    "relief_lines": "ctxagent.agent.providers.pricing",
    "model_info": "ctxagent.agent.providers.registry",
    "parse_model_name": "ctxagent.agent.providers.registry",
    # what to tell a user with no model; the line a sub-agent's system prompt ends with
    "setup_text": "ctxagent.agent.providers.setup_text",
    "model_examples": "ctxagent.agent.providers.setup_text",
    "start_examples": "ctxagent.agent.providers.setup_text",
    "SUBAGENT_LINE": "ctxagent.agent.subagents.limits",
    # the repository's files, as the tools see them
    "list_repo_files": "ctxagent.tools.listing",
}
__all__ = ["__version__", *sorted(_EXPORTS)]

if TYPE_CHECKING:
    from ctxagent.agent.checkpoints.rewind import (
        REWIND_MODES as REWIND_MODES,
        RewindMode as RewindMode,
        describe_rewind as describe_rewind,
        find_user_turn as find_user_turn,
    )
    from ctxagent.agent.checkpoints.session_changes import (
        SessionChanges as SessionChanges,
        commit_changes as commit_changes,
        draft_message as draft_message,
        session_changes as session_changes,
    )
    from ctxagent.agent.checkpoints.turns import (
        TurnInfo as TurnInfo,
    )
    from ctxagent.agent.config import (
        Config as Config,
        flags_from_args as flags_from_args,
        load_config as load_config,
    )
    from ctxagent.agent.custom_commands import (
        CustomCommand as CustomCommand,
        confirm_commands as confirm_commands,
        confirmation as confirmation,
        confirmation_text as confirmation_text,
        expand_command as expand_command,
        load_commands as load_commands,
        template_ref as template_ref,
    )
    from ctxagent.agent.factory import (
        create_agent as create_agent,
        warm_sdk as warm_sdk,
    )
    from ctxagent.agent.instructions.draft import (
        InitDraft as InitDraft,
        init_draft as init_draft,
        init_prompt as init_prompt,
        write_agents_md as write_agents_md,
    )
    from ctxagent.agent.instructions.loading import (
        instruction_sections as instruction_sections,
    )
    from ctxagent.agent.loop import (
        Agent as Agent,
    )
    from ctxagent.agent.parts import (
        AgentParts as AgentParts,
        Approver as Approver,
    )
    from ctxagent.agent.permissions import (
        PLAN_MODE as PLAN_MODE,
        next_mode as next_mode,
    )
    from ctxagent.agent.providers.pricing import (
        SessionCost as SessionCost,
        call_cost as call_cost,
        model_calls as model_calls,
        relief_lines as relief_lines,
        session_cost as session_cost,
    )
    from ctxagent.agent.providers.registry import (
        cost_usd as cost_usd,
        model_info as model_info,
        parse_model_name as parse_model_name,
    )
    from ctxagent.agent.providers.setup_text import (
        model_examples as model_examples,
        setup_text as setup_text,
        start_examples as start_examples,
    )
    from ctxagent.agent.session import (
        Session as Session,
        find_repo_root as find_repo_root,
        list_sessions as list_sessions,
        open_session as open_session,
        record_mode as record_mode,
        with_session_mode as with_session_mode,
        with_session_model as with_session_model,
    )
    from ctxagent.agent.session_ops import (
        open_handoff as open_handoff,
        switch_model as switch_model,
    )
    from ctxagent.agent.subagents.limits import (
        SUBAGENT_LINE as SUBAGENT_LINE,
    )
    from ctxagent.agent.subagents.report import (
        ChildRow as ChildRow,
        child_rows as child_rows,
        open_child_log as open_child_log,
    )
    from ctxagent.agent.trust import (
        decline as decline,
        describe_ignored as describe_ignored,
        describe_untrusted as describe_untrusted,
        needs_prompt as needs_prompt,
        read_trusted_files as read_trusted_files,
        trust_repo as trust_repo,
    )
    from ctxagent.agent.updates import (
        AgentEvent as AgentEvent,
        AssistantDelta as AssistantDelta,
        AssistantDone as AssistantDone,
        CompactionDone as CompactionDone,
        ContextBuilt as ContextBuilt,
        HandoffDrafted as HandoffDrafted,
        McpStatus as McpStatus,
        ModelWaiting as ModelWaiting,
        Notice as Notice,
        PermissionDecision as PermissionDecision,
        PermissionRequest as PermissionRequest,
        StepStarted as StepStarted,
        SubAgentUpdate as SubAgentUpdate,
        ToolFinished as ToolFinished,
        ToolStarted as ToolStarted,
        TurnFinished as TurnFinished,
        TurnStarted as TurnStarted,
    )
    from ctxagent.agent.user_tools import (
        DIRECT_CALL_PREFIX as DIRECT_CALL_PREFIX,
        pasted_image as pasted_image,
    )
    from ctxagent.tools.listing import (
        list_repo_files as list_repo_files,
    )
else:
    from ctxagent.context.floor.lazy import lazy_face

    __getattr__, __dir__ = lazy_face(globals(), _EXPORTS)
