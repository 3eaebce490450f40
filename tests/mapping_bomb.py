"""The issue 27 mapping probe, shared by the engine, admin and worker tests."""

from __future__ import annotations

#: 172 characters that doubled a document twenty times, then wrote it out (the issue measured a
#: 120 MB body and 380 MB of RSS in 1.3 s before the engine had limits).
BOMB = " | ".join(["[@,@]"] * 20 + ["to_string(@)"])
#: A payload the unbounded bomb turns into a 120 MB body (2**20 copies of about 115 bytes).
BOMB_PAYLOAD = {"po_number": "PO-1", "note": "x" * 90}
#: The same bomb on this payload would make 22 MB: still 80 times the limit, and a test that
#: runs it against code without limits fails without taking hundreds of MB.
SMALL_PAYLOAD = {"po_number": "PO-B"}
#: A message type whose only field is the bomb.
BOMB_TYPE = {"mapping": {"output": {"order": {"path": BOMB}}}}
