"""A local Lambda runtime pool (devstack.lambda_runtime.FunctionPool) of one function whose
handler is given as source: what the devstack runtime's own tests start from."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from devstack.lambda_runtime import FunctionPool, FunctionSpec


def pool_of(code_dir: Path, source: str, *, max_instances: int = 1, **spec: Any) -> FunctionPool:
    """`source` written as `code_dir`/app.py and served as `app.handler` (30 s timeout); `spec`
    adds to the function's FunctionSpec (environment, layer_dirs, isolated...)."""
    (code_dir / "app.py").write_text(source)
    function = FunctionSpec(
        logical_id="Fn",
        name="fn",
        arn="arn:aws:lambda:us-east-1:123456789012:function:fn",
        code_dir=str(code_dir),
        handler="app.handler",
        timeout_seconds=30,
        **spec,
    )
    return FunctionPool(function, {}, max_instances=max_instances)
