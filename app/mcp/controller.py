"""`McpController`: the tool loop of the chat window, on the GUI thread.

    reply ends with reason "tool_calls"  →  ask the user about each call (unless "Always")
    →  run it on the hub's thread with the timeout  →  store its result  →  once every call of the
    step has one, the model's next step (`ChatPanel.run_tool_step`), up to the step limit.

A denied call, a failed one, a timeout and a crash all give the model a result that says so, and
the reply goes on: the user sees the same text in the call's block.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Callable, Optional

from PySide6.QtCore import QObject, Signal
from PySide6.QtWidgets import QWidget

from app.bridge import Bridge, Finished
from app.conversations.tool_turn import pending
from app.store import Message, Store, ToolCallRecord

from .approval import ALWAYS, DENY, ApprovalDialog
from .config import ConfigError, McpConfig, load_config
from .hub import McpHub
from .offer import offer_for

log = logging.getLogger(__name__)
DENIED_TEXT = "The user did not allow this call."


class McpController(QObject):
    """Owns the hub and the config; answers replies' tool calls. Create on the GUI thread."""

    reloaded = Signal()
    """mcp.json was read again (servers, limits or the tool-call rule may have changed)."""
    notice = Signal(str)
    """Something the user should know (a config error, the step limit reached)."""
    asking = Signal(object)
    """An ApprovalDialog was opened (tests and screenshots find it here)."""

    def __init__(self, bridge: Bridge, home: Path, run_step: Callable[[int, Message], None],
                 parent_widget: Optional[QWidget] = None) -> None:
        super().__init__(parent_widget)
        self.bridge = bridge
        self.home = Path(home)
        self.run_step = run_step
        """Starts the model's next step of a reply (the chat panel's `run_tool_step`)."""
        self.parent_widget = parent_widget
        self.hub = McpHub(self.home / "mcp-logs")
        self.config = McpConfig()
        self.config_error = ""
        self.require_call = False
        """Step 1 of a reply must call a tool (tool_choice "required"); else the model chooses.
        Read from mcp.json (`confab.requireToolCall`) at each `reload`, so it outlives a restart."""
        self.always: set[tuple[str, str]] = set()
        """(server, tool) the user allowed for good ("Always for this tool"), until the app closes."""
        self.dialog: Optional[ApprovalDialog] = None
        self._queue: list[tuple[int, ToolCallRecord]] = []  # calls waiting to be asked about or run
        self._busy = False
        self.reload()
        bridge.tools_for = self._tools_for

    # -- config ------------------------------------------------------------------------------------
    def reload(self) -> None:
        """Read mcp.json again (the user may have changed it since) and start its servers in the
        background. A file that does not read keeps the servers read last running (a file being
        edited stops no conversation's tools); `config_error` says why."""
        try:
            config = load_config(self.home)
        except ConfigError as e:
            self.config_error = str(e)
            self.notice.emit(str(e))
            return
        self.config, self.config_error = config, ""
        self.require_call = config.require_call
        self.hub.configure(self.config.servers)
        for server in self.config.servers:
            self.hub.connect(server.name)
        self.reloaded.emit()

    def change(self, edit: Callable[[Path], None]) -> None:
        """Apply `edit` (one of `config_edit`'s: it reads the file as it is now and changes only
        its part) to mcp.json, then read it again. OSError or ConfigError: nothing was written."""
        edit(self.home)
        self.reload()

    def close(self) -> None:
        self.bridge.tools_for = None
        if self.dialog is not None:
            self.dialog.close()
        self.hub.close()

    def _tools_for(self, store: Store, conversation_id: int, step: int):  # store thread
        return offer_for(self.hub, self.config, store, conversation_id, step, self.require_call)

    # -- the loop ----------------------------------------------------------------------------------
    def on_reply_finished(self, finished: Finished) -> None:
        """A reply ended; one that made tool calls is answered (connect to `reply_finished`)."""
        if finished.finish_reason != "tool_calls":
            return
        cid = finished.conversation_id
        self.bridge.run(lambda store: store.messages(cid)[-1]).success(
            lambda message: self._queue_calls(cid, message)).failure(lambda e: self.notice.emit(str(e)))

    def _queue_calls(self, conversation_id: int, message: Message) -> None:
        calls = pending(message.tool_calls)
        if not calls:
            return
        self._queue.extend((conversation_id, c) for c in calls)
        self._next()

    def _next(self) -> None:
        if self._busy or not self._queue:
            return
        self._busy = True
        cid, call = self._queue[0]
        if (call.server, call.tool) in self.always:
            self._run(cid, call)
            return
        description = next((t.description for t in self.hub.tools(call.server) if t.name == call.tool), "")
        self.dialog = ApprovalDialog(call, description, self.parent_widget)
        self.dialog.decided.connect(lambda decision: self._decided(cid, call, decision))
        self.dialog.open()
        self.asking.emit(self.dialog)

    def _decided(self, conversation_id: int, call: ToolCallRecord, decision: str) -> None:
        self.dialog = None
        if decision == DENY:
            self._record(conversation_id, call, "denied", DENIED_TEXT)
            return
        if decision == ALWAYS:
            self.always.add((call.server, call.tool))
        self._run(conversation_id, call)

    def _run(self, conversation_id: int, call: ToolCallRecord) -> None:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = {}
        future = self.hub.call(call.server, call.tool, arguments, self.config.timeout_s)
        future.add_done_callback(lambda f: self.bridge.route.post(self._ran, conversation_id, call, f))

    def _ran(self, conversation_id: int, call: ToolCallRecord, future) -> None:
        try:
            outcome = future.result()
            status, text = outcome.status, outcome.text
        except Exception as e:  # noqa: BLE001 (the hub is closed)
            status, text = "failed", f"The tool {call.tool} could not run: {e}"
        self._record(conversation_id, call, status, text)

    def _record(self, conversation_id: int, call: ToolCallRecord, status: str, text: str) -> None:
        self.bridge.run(lambda store: store.set_tool_result(call.id, status, text)).success(
            lambda message: self._recorded(conversation_id, message)).failure(self._store_failed)

    def _store_failed(self, error: BaseException) -> None:
        self._queue.pop(0)
        self._busy = False
        self.notice.emit(f"A tool result could not be stored: {error}")
        self._next()

    def _recorded(self, conversation_id: int, message: Message) -> None:
        self._queue.pop(0)
        self._busy = False
        if not pending(message.tool_calls):
            steps = max(c.step for c in message.tool_calls)
            if steps >= self.config.step_limit:
                self.notice.emit(f"Tool steps reached the limit ({self.config.step_limit}): the model answers "
                                 "with what it has")
            self.run_step(conversation_id, message)
        self._next()
