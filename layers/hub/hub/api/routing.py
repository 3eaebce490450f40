"""Requests no route takes, answered in the one error shape: 404 `route_not_found` for an
unknown path, 405 `method_not_allowed` with `Allow` for a known path with another method.

On AWS these reach the function through the HTTP API's `$default` route (template.yaml), so
API Gateway's own `{"message":"Not Found"}` is never what a partner sees.
"""

from __future__ import annotations

from aws_lambda_powertools.event_handler.api_gateway import ApiGatewayResolver

from hub.errors import HubError, MethodNotAllowed, RouteNotFound


def allowed_methods(app: ApiGatewayResolver, path: str) -> tuple[str, ...]:
    """The methods the resolver has a route for at `path`, sorted."""
    # Powertools has no public listing of its routes; these two lists are what its own
    # `_resolve` walks (a unit test fails if a release renames them).
    routes = [*app._static_routes, *app._dynamic_routes]
    return tuple(sorted({route.method.upper() for route in routes if route.rule.match(path)}))


def unmatched(app: ApiGatewayResolver) -> HubError:
    """Why the current request matched no route: MethodNotAllowed when its path has routes for
    other methods, RouteNotFound otherwise."""
    event = app.current_event
    allowed = allowed_methods(app, event.path)
    if allowed:
        return MethodNotAllowed(f"{event.http_method} is not allowed here", allowed=allowed)
    return RouteNotFound("no such route")
