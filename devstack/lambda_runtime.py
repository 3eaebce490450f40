"""Runs Lambda handlers in their own processes, like Lambda execution environments.

Each function gets a small pool of instances. An instance is a ``spawn`` subprocess whose
``os.environ`` and ``sys.path`` are set to the function's configuration before the handler
module is imported, so module-level state and environment are per function, exactly as in
Lambda. Instances start lazily (a cold start) and are reused while idle.

This module must stay free of heavy imports: every instance imports it on start.
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.machinery
import io
import json
import logging
import multiprocessing
import os
import random
import sys
import sysconfig
import threading
import time
import traceback
import uuid
import zipimport
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.process import BaseProcess
from typing import Any, Literal

logger = logging.getLogger(__name__)

#: How instances start. "spawn" (the default): a fresh interpreter each, as a Lambda execution
#: environment. "forkserver": forked from one server process per stack process that has imported
#: the third-party libraries once (devstack/instance_preload.py), about a quarter of a CPU-second
#: less per cold start; the test suite sets it, since its local stacks start hundreds of instances. Built mode
#: (`isolated`) always spawns: it checks what the handler imports from where.
INSTANCE_START_ENV = "DEVSTACK_INSTANCE_START"
INIT_TIMEOUT_SECONDS = 60.0  # generous: spawn + imports on a loaded 2-core CI machine
ACQUIRE_TIMEOUT_SECONDS = 60.0
_PASSTHROUGH_ENV = ("PATH", "HOME", "LANG", "LC_ALL", "TMPDIR", "TZ", "SYSTEMROOT")

#: What made an invocation: one of the stack's event sources (SQS, streams, SNS, schedules, an
#: asynchronous invocation's retry), or a caller's request (HTTP, a direct invoke).
Trigger = Literal["event", "request"]


@dataclass(frozen=True)
class FunctionSpec:
    """Everything needed to run one function; built from the template by the provisioner."""

    logical_id: str
    name: str
    arn: str
    code_dir: str
    handler: str
    layer_dirs: tuple[str, ...] = ()
    environment: Mapping[str, str] = field(default_factory=dict)
    timeout_seconds: float = 3.0
    memory_mb: int = 128
    events: Mapping[str, Any] = field(default_factory=dict)
    function_url: Mapping[str, Any] | None = None
    #: Built mode (`make run BUILT=1`): the instance sees only its code and layer folders and the
    #: standard library, as on Lambda, and fails its init if the handler imports anything else.
    isolated: bool = False


@dataclass(frozen=True)
class InvocationResult:
    """Outcome of one invocation: ``payload`` on success, ``error`` (Lambda's shape) if not."""

    request_id: str
    payload: Any = None
    error: dict[str, Any] | None = None

    @property
    def ok(self) -> bool:
        return self.error is None


class InvocationError(RuntimeError):
    """A direct invoke whose function raised, timed out or failed to initialise."""

    def __init__(self, result: InvocationResult) -> None:
        error = result.error or {}
        super().__init__(f"{error.get('errorType')}: {error.get('errorMessage')}")
        self.result = result
        self.error_type = str(error.get("errorType", ""))
        self.error_message = str(error.get("errorMessage", ""))


def _total(counts: Mapping[str, int], trigger: str | None) -> int:
    return counts[trigger] if trigger else sum(counts.values())


def _error(error_type: str, message: str, request_id: str = "") -> dict[str, Any]:
    return {"errorType": error_type, "errorMessage": message, "requestId": request_id, "stackTrace": []}


# --- child side ------------------------------------------------------------------------


class LambdaContext:
    """The context object a Python Lambda handler receives (the commonly used members)."""

    def __init__(self, boot: Mapping[str, Any], request_id: str, deadline: float) -> None:
        self.function_name: str = boot["name"]
        self.function_version = "$LATEST"
        self.invoked_function_arn: str = boot["arn"]
        self.memory_limit_in_mb: int = int(boot["memory_mb"])
        self.aws_request_id = request_id
        self.log_group_name = f"/aws/lambda/{boot['name']}"
        self.log_stream_name: str = boot["log_stream"]
        self.identity = None
        self.client_context = None
        self._deadline = deadline

    def get_remaining_time_in_millis(self) -> int:
        return max(0, int((self._deadline - time.time()) * 1000))


def _exception_payload(exc: BaseException, request_id: str) -> dict[str, Any]:
    return {
        "errorType": type(exc).__name__,
        "errorMessage": str(exc),
        "requestId": request_id,
        "stackTrace": traceback.format_tb(exc.__traceback__),
    }


class _LogStream(io.TextIOBase):
    """The instance's stdout, standing for its CloudWatch log stream: every line still goes to
    the real stdout, and the EMF documents among them (what CloudWatch turns into metrics) are
    also kept, to go back to the parent with the invocation's answer (devstack/emf.py)."""

    def __init__(self, out: Any) -> None:
        super().__init__()
        self._out = out
        self._partial = ""
        self._emf: list[str] = []

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self._out, "encoding", "utf-8"))

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return False

    def write(self, text: str) -> int:
        written = self._out.write(text)
        self._partial += text
        if "\n" in self._partial:
            *lines, self._partial = self._partial.split("\n")
            text_lines = (line.strip() for line in lines)
            self._emf += [line for line in text_lines if line.startswith("{") and '"_aws"' in line]
        return int(written) if written is not None else len(text)

    def flush(self) -> None:
        self._out.flush()

    def drain_emf(self) -> list[str]:
        lines, self._emf = self._emf, []
        return lines


def standard_library_paths() -> list[str]:
    """This interpreter's standard library (what Lambda's runtime has besides the task root and
    /opt): its stdlib folders, lib-dynload and zipped stdlib, never a site-packages."""
    paths = _base_paths()
    folders = {paths["stdlib"], paths["platstdlib"], os.path.join(paths["platstdlib"], "lib-dynload")}
    zipped = [entry for entry in sys.path if entry.endswith(".zip") and entry.startswith(sys.base_prefix)]
    return [*sorted(folder for folder in folders if os.path.isdir(folder)), *zipped]


def _base_paths() -> dict[str, str]:
    """sysconfig's paths of the base installation (in a venv, the plain call mixes in the venv)."""
    base = {"base": sys.base_prefix, "installed_base": sys.base_prefix}
    platbase = {"platbase": sys.base_exec_prefix, "installed_platbase": sys.base_exec_prefix}
    return sysconfig.get_paths(vars=base | platbase)


def _site_packages() -> tuple[str, ...]:
    paths, here = _base_paths(), sysconfig.get_paths()
    bases = {paths["purelib"], paths["platlib"], here["purelib"], here["platlib"], *site_module_paths()}
    return tuple(os.path.realpath(base) + os.sep for base in bases)


def site_module_paths() -> list[str]:
    """Every site-packages / dist-packages folder on sys.path (a venv's and the base's)."""
    return [entry for entry in sys.path if os.path.basename(entry) in ("site-packages", "dist-packages")]


def imported_outside(before: set[str], roots: list[str]) -> list[str]:
    """Modules imported since ``before`` whose file lies under none of ``roots``, or inside a
    site-packages that no root names (sorted "name (file)" strings); built-ins and namespace
    packages have no file and pass."""
    prefixes = tuple(os.path.realpath(root) + os.sep for root in roots)
    site = tuple(prefix for prefix in _site_packages() if not prefix.startswith(prefixes))
    strays = []
    for name, module in list(sys.modules.items()):
        origin = getattr(module, "__file__", None)
        if name in before or not origin:
            continue
        real = os.path.realpath(origin)
        if not real.startswith(prefixes) or real.startswith(site):
            strays.append(f"{name} ({origin})")
    return sorted(strays)


def _isolate(paths: list[str]) -> list[str]:
    """Built mode: ``sys.path`` becomes ``paths`` and the standard library, and only Python's
    own finders stay (an editable install's finder would map `hub` to the source tree).
    Returns the allowed roots."""
    site_folders = set(site_module_paths())
    allowed = [*paths, *standard_library_paths()]
    sys.path[:] = allowed
    machinery = importlib.machinery
    own = (machinery.BuiltinImporter, machinery.FrozenImporter, machinery.PathFinder)
    sys.meta_path[:] = [finder for finder in sys.meta_path if finder in own]
    sys.path_hooks[:] = [
        hook
        for hook in sys.path_hooks
        if hook is zipimport.zipimporter or getattr(hook, "__qualname__", "").startswith("FileFinder.")
    ]
    sys.path_importer_cache.clear()
    importlib.invalidate_caches()
    return [root for root in allowed if root not in site_folders]


def _write_output_to(path: str) -> None:
    """This instance's stdout and stderr (the file descriptors: whatever writes them, a library's
    C code included) append to the file at `path`, a line at a time, so the lines of the
    function's instances interleave whole."""
    descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
    os.dup2(descriptor, 1)
    os.dup2(descriptor, 2)
    os.close(descriptor)
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)


def _instance_main(conn: Connection, boot: dict[str, Any]) -> None:
    """Entry point of an instance process: init once, then serve invocations until EOF."""
    if boot.get("log_file"):
        _write_output_to(boot["log_file"])
    log_stream = _LogStream(sys.stdout)
    sys.stdout = log_stream
    os.environ.clear()
    os.environ.update(boot["env"])
    isolated_roots = _isolate(boot["paths"]) if boot.get("isolated") else None
    if isolated_roots is None:
        sys.path[:0] = boot["paths"]
    os.chdir(boot["code_dir"])  # Lambda runs handlers with the task root as cwd
    module_name, _, function_name = boot["handler"].replace("/", ".").rpartition(".")
    already_imported = set(sys.modules)
    try:
        handler = getattr(importlib.import_module(module_name), function_name)
        if isolated_roots is not None:
            strays = imported_outside(already_imported, isolated_roots)
            if strays:
                raise ImportError(f"imported from outside the function and its layers: {strays[:5]}")
    except Exception as exc:
        traceback.print_exc()
        payload = _exception_payload(exc, "")
        payload["errorType"] = "Runtime.ImportModuleError"
        conn.send(("init_error", payload))
        return
    conn.send(("ready", None))
    while True:
        try:
            message = conn.recv()
        except (EOFError, KeyboardInterrupt):
            return
        if message is None:
            return
        request_id, event_json, deadline = message
        context = LambdaContext(boot, request_id, deadline)
        try:
            result = handler(json.loads(event_json), context)
            reply = ("ok", json.dumps(result))
        except Exception as exc:
            # Lambda writes the error to the function's log; ours is this process's stderr.
            print(f"[ERROR] {type(exc).__name__}: {exc}", file=sys.stderr)
            traceback.print_exc()
            reply = ("error", json.dumps(_exception_payload(exc, request_id)))
        conn.send((*reply, log_stream.drain_emf()))


# --- parent side -----------------------------------------------------------------------


class _Instance:
    def __init__(self, process: BaseProcess, conn: Connection) -> None:
        self.process = process
        self.conn = conn
        self._killed = False
        self._kill_lock = threading.Lock()

    def kill(self) -> None:
        """Stops the instance; once, whichever thread asks first (a pool's close() and the
        invocation it cut short both do: two closes of one pipe would close another's fd)."""
        with self._kill_lock:
            if self._killed:
                return
            self._killed = True
        with contextlib.suppress(OSError, ValueError):  # already closed or dead
            self.conn.send(None)
        self.process.join(timeout=0.5)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(timeout=2)
        self.conn.close()


def instance_context(isolated: bool) -> Any:
    """The multiprocessing context an instance starts in (see INSTANCE_START_ENV)."""
    if isolated or os.environ.get(INSTANCE_START_ENV) != "forkserver":
        return multiprocessing.get_context("spawn")
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(["devstack.instance_preload"])
    return context


class FunctionPool:
    """Up to ``max_instances`` concurrent instances of one function.

    ``invoke`` blocks while all instances are busy. A timed-out or crashed instance is
    killed and replaced on the next invocation (a new cold start), as Lambda does.
    """

    def __init__(
        self,
        spec: FunctionSpec,
        runtime_env: Mapping[str, str],
        max_instances: int = 4,
        on_emf: Callable[[list[str]], None] | None = None,
        log_file: str | None = None,
    ) -> None:
        self.spec = spec
        #: Where the instances' stdout and stderr go (their log stream): None, this process's.
        self._log_file = log_file
        #: Gets the EMF lines each invocation printed (the stack publishes them as metrics).
        self._on_emf = on_emf
        self._runtime_env = dict(runtime_env)
        self._max_instances = max_instances
        self._context = instance_context(spec.isolated)
        self._idle: list[_Instance] = []
        self._live: set[_Instance] = set()  # every running instance, busy or idle
        self._total = 0
        self._closed = False
        self._condition = threading.Condition()
        self.cold_starts = 0
        #: Invocations started and finished so far, by trigger (a few integer increments per
        #: invocation): what tells a waiting test that the function is still at work.
        self._counts_lock = threading.Lock()
        self._started: dict[str, int] = {"event": 0, "request": 0}
        self._finished: dict[str, int] = {"event": 0, "request": 0}

    def _boot(self) -> dict[str, Any]:
        env = {key: os.environ[key] for key in _PASSTHROUGH_ENV if key in os.environ}
        env.update(
            {
                "LAMBDA_TASK_ROOT": self.spec.code_dir,
                "_HANDLER": self.spec.handler,
                "AWS_EXECUTION_ENV": "AWS_Lambda_python3.12",
                "AWS_LAMBDA_FUNCTION_NAME": self.spec.name,
                "AWS_LAMBDA_FUNCTION_VERSION": "$LATEST",
                "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": str(self.spec.memory_mb),
                "AWS_LAMBDA_LOG_GROUP_NAME": f"/aws/lambda/{self.spec.name}",
                "AWS_SAM_LOCAL": "true",
                "POWERTOOLS_TRACE_DISABLED": "true",
            }
        )
        env.update(self._runtime_env)
        env.update(self.spec.environment)
        stream = f"{time.strftime('%Y/%m/%d')}/[$LATEST]{uuid.uuid4().hex}"
        env["AWS_LAMBDA_LOG_STREAM_NAME"] = stream
        return {
            "env": env,
            "paths": [self.spec.code_dir, *self.spec.layer_dirs],
            "code_dir": self.spec.code_dir,
            "isolated": self.spec.isolated,
            "handler": self.spec.handler,
            "name": self.spec.name,
            "arn": self.spec.arn,
            "memory_mb": self.spec.memory_mb,
            "log_stream": stream,
            "log_file": self._log_file,
        }

    def _start_instance(self) -> _Instance | dict[str, Any]:
        """Spawn and initialise an instance; returns the init error payload on failure."""
        parent_conn, child_conn = self._context.Pipe()
        process = self._context.Process(
            target=_instance_main,
            args=(child_conn, self._boot()),
            name=f"lambda:{self.spec.logical_id}",
            daemon=True,
        )
        process.start()
        child_conn.close()
        instance = _Instance(process, parent_conn)
        self.cold_starts += 1
        try:
            if not parent_conn.poll(INIT_TIMEOUT_SECONDS):
                instance.kill()
                return _error("Runtime.InitTimeout", "init did not finish in time")
            status, payload = parent_conn.recv()
        except (EOFError, OSError):
            instance.kill()
            return _error("Runtime.ExitError", "instance exited during init")
        if status != "ready":
            instance.kill()
            return dict(payload)
        with self._condition:
            self._live.add(instance)
        return instance

    def _acquire(self) -> _Instance | None:
        """An idle instance, or None when the caller may start a new one (slot reserved)."""
        deadline = time.monotonic() + ACQUIRE_TIMEOUT_SECONDS
        with self._condition:
            while True:
                if self._closed:
                    raise RuntimeError(f"function pool {self.spec.logical_id} is closed")
                if self._idle:
                    return self._idle.pop()
                if self._total < self._max_instances:
                    self._total += 1
                    return None
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"no free instance of {self.spec.logical_id}")
                self._condition.wait(remaining)

    def _release(self, instance: _Instance | None, healthy: bool = True) -> None:
        discard = instance is not None and (self._closed or not healthy)
        with self._condition:
            if instance is None or discard:
                self._total -= 1
                if instance is not None:
                    self._live.discard(instance)
            else:
                self._idle.append(instance)
            self._condition.notify()
        if discard and instance is not None:
            instance.kill()

    def invocations(self, trigger: Trigger | None = None) -> int:
        """Invocations finished so far (answered, failed, timed out or refused), of ``trigger``
        or of any."""
        with self._counts_lock:
            return _total(self._finished, trigger)

    def started(self, trigger: Trigger | None = None) -> int:
        """Invocations started so far (finished or not), of ``trigger`` or of any."""
        with self._counts_lock:
            return _total(self._started, trigger)

    def in_flight(self, trigger: Trigger | None = None) -> int:
        """Invocations under way now (waiting for an instance or running), of ``trigger`` or of any."""
        with self._counts_lock:
            return _total(self._started, trigger) - _total(self._finished, trigger)

    def invoke(
        self, event: Any, request_id: str | None = None, *, trigger: Trigger = "request"
    ) -> InvocationResult:
        """Run the handler once with ``event``; never raises for handler failures. ``trigger``
        says what asked for it (counted, see ``invocations``)."""
        with self._counts_lock:
            self._started[trigger] += 1
        try:
            return self._invoke(event, request_id)
        finally:
            with self._counts_lock:
                self._finished[trigger] += 1

    def _invoke(self, event: Any, request_id: str | None) -> InvocationResult:
        request_id = request_id or str(uuid.uuid4())
        try:
            event_json = json.dumps(event)
        except (TypeError, ValueError) as exc:
            return InvocationResult(request_id, error=_error("InvalidRequestContent", str(exc)))
        try:
            acquired = self._acquire()
        except TimeoutError as exc:
            return InvocationResult(request_id, error=_error("TooManyRequestsException", str(exc)))
        instance: _Instance | None = acquired
        if instance is None:
            try:
                started = self._start_instance()
            except Exception as exc:  # e.g. spawn refused: report it like a failed init
                logger.exception("could not start an instance of %s", self.spec.logical_id)
                started = _error("Runtime.StartError", str(exc))
            if isinstance(started, dict):
                self._release(None)
                started["requestId"] = request_id
                return InvocationResult(request_id, error=started)
            instance = started
        result, healthy = self._run(instance, event_json, request_id)
        self._release(instance, healthy)
        return result

    def _run(self, instance: _Instance, event_json: str, request_id: str) -> tuple[InvocationResult, bool]:
        timeout = self.spec.timeout_seconds
        deadline = time.time() + timeout
        try:
            instance.conn.send((request_id, event_json, deadline))
            # A little grace so the handler's own timeout handling can answer first.
            if not instance.conn.poll(timeout + 0.5):
                logger.warning("%s timed out after %.1fs", self.spec.logical_id, timeout)
                message = f"Task timed out after {timeout:.2f} seconds"
                return InvocationResult(
                    request_id, error=_error("Sandbox.Timedout", message, request_id)
                ), False
            status, body, emf = instance.conn.recv()
        except (EOFError, OSError, ValueError):  # instance died or was killed by close()
            return InvocationResult(
                request_id, error=_error("Runtime.ExitError", "instance exited during invocation", request_id)
            ), False
        if emf and self._on_emf is not None:
            self._on_emf(emf)
        if status == "ok":
            return InvocationResult(request_id, payload=json.loads(body)), True
        error = json.loads(body)
        logger.info("%s raised %s", self.spec.logical_id, error.get("errorType"))
        return InvocationResult(request_id, error=error), True

    def crash(self, *, busy: bool, every: bool = False) -> list[int]:
        """Kills instances the way a crash does (SIGKILL: no shutdown, nothing of the handler
        runs after it) and returns their pids: busy ones, whose invocations then fail with
        ``Runtime.ExitError`` as when Lambda's sandbox dies mid-invocation (an SQS batch comes
        back after its visibility timeout), or idle ones, which the next invocation replaces with
        a cold start. One of that kind at random, or ``every`` one. Empty when none was running
        (the reliability suite, chaos runs, the soak)."""
        with self._condition:
            if busy:
                candidates = [instance for instance in self._live if instance not in self._idle]
            else:
                candidates = list(self._idle)
            if not every and candidates:
                candidates = [random.choice(candidates)]  # noqa: S311 - chaos, not security
            if not busy:
                # Out of the pool first: no invocation may pick them up while they die.
                for victim in candidates:
                    self._idle.remove(victim)
                    self._live.discard(victim)
                    self._total -= 1
                self._condition.notify_all()
        killed = []
        for victim in candidates:
            pid = victim.process.pid
            if pid is not None and victim.process.is_alive():
                victim.process.kill()
                killed.append(pid)
            if not busy:
                victim.kill()  # its pipe; a busy one's invocation cleans up after itself
        return killed

    def close(self) -> None:
        """Terminate every instance, busy ones included (their invocations fail)."""
        with self._condition:
            self._closed = True
            instances, self._live = list(self._live), set()
            self._total -= len(self._idle)
            self._idle = []
            self._condition.notify_all()
        for instance in instances:
            instance.kill()
