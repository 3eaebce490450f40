"""The pipeline worker (PipelineWorkerFunction, functions/pipeline_worker): step messages,
their deliveries through the connection gate (pause, breaker, limits), retries on EventBridge
Scheduler, the connection jobs of the pipeline queue (release, probe, drain) and bulk-job pages
(through the operator's moves, hub.wiring.common.operations)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hub.wiring import common
from hub.wiring.common import PipelineRetrySettings
from hub.wiring.registry import once, settings_of

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping

    from hub.adapters.scheduler import EventBridgeRetryScheduler
    from hub.admin.audit import AuditTrail
    from hub.admin.bulk import BulkRunner
    from hub.admin.search import MessageSearch
    from hub.config_cache import CachedConfig
    from hub.delivery.egress import EgressPolicy
    from hub.delivery.gate import ConnectionGate
    from hub.delivery.port import CertificateStore, Connector
    from hub.delivery.release import Releaser
    from hub.domain.tenancy import DestinationProtocol
    from hub.pipeline.batch import WorkerBatch
    from hub.pipeline.worker import PipelineWorker


class WorkerSettings(PipelineRetrySettings):
    """The worker refuses to start without its retries' schedule group, target queue, role and
    dead-letter queue. Its KMS key is optional (without one: no client certificates, nothing
    sealed to open)."""


SETTINGS = WorkerSettings
settings = settings_of(SETTINGS, "the pipeline worker")


#: The cold start's check (the handler calls it at import): a missing or malformed variable
#: fails the init, named, instead of the first request.
init = settings


@once
def pipeline_worker() -> PipelineWorker:
    return build_pipeline_worker()


def worker_batch(remaining_ms: Callable[[], int]) -> WorkerBatch:
    """One invocation's batch of the pipeline worker, under a time guard that reads
    `remaining_ms` (the Lambda context's). The worker, the releaser and the bulk runner are
    the process's own, each built at its first use (the bulk runner loads the admin side)."""
    from hub.adapters.metrics import EmfMetrics
    from hub.adapters.sqs import SqsRedelivery
    from hub.pipeline.batch import WorkerBatch
    from hub.pipeline.time_guard import TimeGuard

    s = settings()
    return WorkerBatch(
        TimeGuard(remaining_ms),
        worker=pipeline_worker,
        jobs=releaser,
        pages=bulk_runner,
        redelivery=SqsRedelivery(s.pipeline_queue_url),
        max_receives=s.pipeline_max_receives,
        metrics=EmfMetrics(),
    )


def retry_scheduler() -> EventBridgeRetryScheduler:
    return common.retry_scheduler(settings())


def build_pipeline_worker() -> PipelineWorker:
    """A new worker with its own connectors (one per Lambda instance). Each connector, and the
    certificate store, is built at its first use (hub.delivery.lazy)."""
    from hub.adapters.dynamo.executions import DynamoExecutions
    from hub.adapters.metrics import EmfMetrics
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.lazy import LazyCertificateStore
    from hub.pipeline.retries import RetryOrchestrator
    from hub.pipeline.worker import PipelineWorker

    s = settings()
    scheduler = retry_scheduler()
    return PipelineWorker(
        delivery_config(),
        DynamoExecutions(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        delivery_connectors(LazyCertificateStore(lambda: common.certificate_store(s))),
        retries=RetryOrchestrator(scheduler),
        metrics=EmfMetrics(),
        gate=connection_gate(scheduler),
    )


def connection_gate(scheduler: EventBridgeRetryScheduler | None = None) -> ConnectionGate:
    """Pause and circuit breaker in front of each delivery (issue 12), one per worker instance."""
    from datetime import timedelta

    from hub.adapters.dynamo.connection_limits import DynamoConnectionLimits
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.breaker import BreakerPolicy
    from hub.delivery.gate import ConnectionGate

    s = settings()
    return ConnectionGate(
        DynamoConnectionStates(s.table_name),
        SqsStepQueue(s.pipeline_queue_url),
        scheduler or retry_scheduler(),
        policy=BreakerPolicy(cooldown=timedelta(seconds=s.breaker_cooldown_seconds)),
        breaker=s.circuit_breaker,
        cache_seconds=s.connection_state_cache_seconds,
        limits=DynamoConnectionLimits(s.table_name),
        # A delivery that frees a slot while held messages wait runs the drain's kick itself.
        run_job=lambda job: releaser().run(job),
    )


@once
def releaser() -> Releaser:
    """The connection jobs of the pipeline queue: release held messages, send the probe."""
    import time

    from hub.adapters.dynamo.connection_limits import DynamoConnectionLimits
    from hub.adapters.dynamo.connection_state import DynamoConnectionStates
    from hub.adapters.dynamo.connections import DynamoConnections
    from hub.adapters.sqs import SqsStepQueue
    from hub.delivery.drain import Drainer
    from hub.delivery.release import Releaser

    s = settings()
    held = DynamoConnectionStates(s.table_name)
    queue = SqsStepQueue(s.pipeline_queue_url)
    drainer = Drainer(
        held,
        DynamoConnectionLimits(s.table_name),
        DynamoConnections(s.table_name),
        queue,
        clock_ms=lambda: int(time.time() * 1000),
    )
    return Releaser(held, queue, rate_per_second=s.release_rate_per_second, drainer=drainer)


def delivery_connectors(certificates: CertificateStore) -> Mapping[DestinationProtocol, Connector]:
    """A connector per protocol, each built at its first delivery: httpx loads with the first
    REST delivery, zeep and lxml with the first SOAP one."""
    from hub.delivery.lazy import LazyConnectors
    from hub.domain.tenancy import DestinationProtocol

    return LazyConnectors(
        {
            DestinationProtocol.HTTP: lambda: common.http_connector(certificates, egress_policy()),
            DestinationProtocol.SOAP: lambda: common.soap_connector(certificates, egress_policy()),
        }
    )


@once
def delivery_config() -> CachedConfig:
    """The configuration as the worker reads it: destination credentials opened (cached as
    the ingest API's `webhook_config`)."""
    from hub.sealed_config import DESTINATION_CREDENTIAL

    return common.cached_config(settings(), (DESTINATION_CREDENTIAL,))


@once
def egress_policy() -> EgressPolicy:
    """The one egress policy of this process (template EgressAllowedCidrs): the connectors'."""
    return common.egress_policy(settings())


@once
def bulk_runner() -> BulkRunner:
    """The pipeline worker's side of bulk jobs: one page per queue message, acting through the
    operator's moves (no lanes: the worker redrives nothing)."""
    from hub.adapters.dynamo.bulk_jobs import DynamoBulkJobs
    from hub.adapters.sqs import SqsStepQueue
    from hub.admin.bulk import BulkRunner

    s = settings()
    return BulkRunner(
        DynamoBulkJobs(s.table_name),
        common.operations(s, {}, common.config_store(s, ()), audit_trail()),
        SqsStepQueue(s.pipeline_queue_url),
        finder=message_search(),
        rate_per_second=s.release_rate_per_second,
    )


@once
def message_search() -> MessageSearch:
    """The bulk runner's finder: a search's messages, as the admin API searches them."""
    return common.message_search(settings())


@once
def audit_trail() -> AuditTrail:
    """Where the bulk runner's moves are audited, as the admin API's."""
    return common.audit_trail(settings())
