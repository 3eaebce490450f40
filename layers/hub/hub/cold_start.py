"""Imported first by every handler module: in Lambda, the garbage collector is paused from here,
before Powertools, pydantic and the hub load, until the end of the first invocation
(`hub.observability.gc_after_first_invocation` resumes it and freezes what the cold start built).

A cold start allocates hundreds of thousands of long-lived objects and almost no garbage; the
collections its imports trigger (~12 ms of a ~200 ms import here) free next to nothing. The
standard library only, so that it can come before every other import. Outside Lambda (tests,
tools, the local stack's own process) nothing is paused.
"""

from __future__ import annotations

import gc
import os

#: Whether this module paused the collector (gc_after_first_invocation resumes it).
paused = bool(os.getenv("LAMBDA_TASK_ROOT")) and gc.isenabled()
if paused:
    gc.disable()
