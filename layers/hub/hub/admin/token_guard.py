"""Failed admin tokens, limited per source address (issue 14).

The admin Function URL keeps `AuthType: NONE` with bearer tokens
(docs/decisions/admin-function-url-auth.md), so guessing tokens must cost the guesser: after
`limit` refused tokens from one address within the window, that address is answered 429 until
the oldest failure leaves the window, before any token is looked at (no DynamoDB read, no
Secrets Manager call). Per warm instance, like the partner API's limit; a good token from a
blocked address waits too, since telling it apart would need the very lookup the block saves.
"""

from __future__ import annotations

import ipaddress

from hub.domain.rate_limit import FailureWindow, retry_after_seconds
from hub.errors import TooManyFailedTokens


def source_key(source: str) -> str:
    """What one guesser is counted by: an IPv4 address, or an IPv6 address's /64 (Function URLs
    are dual-stack, and one client commonly holds a whole /64: per address it could guess
    without end). Anything unparseable counts as itself."""
    try:
        address = ipaddress.ip_address(source)
    except ValueError:
        return source
    if address.version == 6:
        return str(ipaddress.ip_network(f"{address}/64", strict=False))
    return str(address)


class FailedTokenGuard:
    def __init__(self, window: FailureWindow) -> None:
        self._window = window

    def check(self, source: str) -> None:
        """TooManyFailedTokens while `source` is blocked."""
        wait = self._window.blocked_for(source_key(source))
        if wait > 0:
            raise TooManyFailedTokens(
                "too many refused admin tokens from this address; try again after Retry-After seconds",
                retry_after_seconds=retry_after_seconds(wait),
            )

    def failed(self, source: str) -> int:
        """Notes a refused token from `source`; how many it has in the window now."""
        return self._window.failed(source_key(source))
