"""The app's background work and its one route back to the GUI thread.

    from app.bridge import Bridge, Send

    bridge = Bridge(home)                                    # opens the store on its own thread
    bridge.attach_engine(engine)                             # once the model has loaded
    bridge.run(lambda store: store.list_conversations()).success(show_list)
    Send(bridge, cid, "Hi").on_chunk(append).success(done).failure(show_error).run()
    bridge.stop(cid)                                         # kept, stored as cancelled
    bridge.close()

Work functions run on the store thread and must not touch widgets; every callback runs on the GUI
thread. Imports Qt, the store, the conversations manager and `engine`'s public names only.
"""

from .bridge import Bridge, EngineNotReadyError, Finished, Job, ReplyRunningError, Send
from .route import GuiRoute

__all__ = ["Bridge", "EngineNotReadyError", "Finished", "GuiRoute", "Job", "ReplyRunningError", "Send"]
