"""The daily certificate-expiry alert (seed 000, scenario F) through the real CertExpiryFunction
handler on mock_aws, on a clock the test moves, posting to a real local Slack receiver."""

from __future__ import annotations

import base64
import json
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import boto3
import pytest

from hub import wiring
from hub.certificates import expiry
from hub.outbox.events import events_of_record
from tests.aws import LambdaContext, load_handler
from tests.destinations import Answer, HttpDestination
from tests.outbox import StreamReader
from tests.pki import PFX_PASSWORD, Pki, issue, pkcs12_of

CONNECTION = "conn_sefaz_sp"
PATH = f"/api/admin/connections/{CONNECTION}/certificate"


@pytest.fixture(autouse=True)
def tenant_t1(stack: Any, admin_api: Any) -> None:
    """A certificate belongs to a tenant that exists (an upload for an unknown one is 404)."""
    created = admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"})
    assert created.status == 201, created.body


@pytest.fixture
def slack(stack: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[HttpDestination]:
    with HttpDestination() as receiver:
        # As the template passes it: the URL in Secrets Manager, the function given its ARN.
        secret = boto3.client("secretsmanager").create_secret(Name="slack-url", SecretString=receiver.url)
        monkeypatch.setenv("HUB_SLACK_WEBHOOK_SECRET_ARN", secret["ARN"])
        wiring.reset()
        yield receiver


@pytest.fixture
def clock(monkeypatch: pytest.MonkeyPatch) -> Callable[[datetime], None]:
    def set_to(when: datetime) -> None:
        monkeypatch.setattr(expiry, "utcnow", lambda: when)

    return set_to


@pytest.fixture
def run_daily(stack: Any, slack: HttpDestination) -> Callable[[], dict[str, Any]]:
    handler = load_handler("CertExpiryFunction")
    scheduled = {"source": "aws.scheduler", "detail-type": "Scheduled Event", "detail": {}}
    return lambda: handler(scheduled, LambdaContext())


def upload(admin_api: Any, pfx: bytes) -> dict[str, Any]:
    body = {
        "tenant_id": "t1",
        "pkcs12_base64": base64.b64encode(pfx).decode(),
        "password": PFX_PASSWORD.decode(),
    }
    answer = admin_api("POST", PATH, body=body)
    assert answer.status == 201, answer.body
    return dict(answer.body)


def not_after_of(view: dict[str, Any]) -> datetime:
    return datetime.strptime(view["not_after"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)


def texts(slack: HttpDestination) -> list[str]:
    return [json.loads(r.body)["text"] for r in slack.requests]


def test_a_certificate_expiring_in_30_days_alerts_once_per_bucket_over_31_days(
    admin_api, pki: Pki, slack, clock, run_daily
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    # Daily at the same hour, an hour before the hour of not_after: 30 days (and 1 hour) left first.
    first = not_after - timedelta(days=30, hours=1)

    sent_buckets = []
    for day in range(31):
        clock(first + timedelta(days=day))
        result = run_daily()
        sent_buckets += [a["bucket"] for a in result["alerted"]]

    assert sent_buckets == [30, 14, 7, 1, 0]
    assert len(slack.requests) == 5
    assert "expires in 30 day(s)" in texts(slack)[0]
    assert CONNECTION in texts(slack)[0]
    assert "expires today" in texts(slack)[-1]


def test_a_rerun_the_same_day_sends_nothing_and_a_renewal_resets_the_buckets(
    admin_api, pki: Pki, slack, clock, run_daily
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    day = not_after - timedelta(days=10)
    clock(day)

    assert [a["bucket"] for a in run_daily()["alerted"]] == [14]
    assert run_daily()["alerted"] == []
    assert len(slack.requests) == 1

    # Renewed: another not_after. Ten days before the new one, bucket 14 alerts again.
    renewed = issue(pki.ca, "Hub Test Client", valid_days=60)
    new_not_after = not_after_of(upload(admin_api, pkcs12_of(renewed, pki.ca)))
    assert new_not_after != not_after
    clock(new_not_after - timedelta(days=10))
    assert [a["bucket"] for a in run_daily()["alerted"]] == [14]
    assert len(slack.requests) == 2


def test_first_seen_at_5_days_alerts_the_tightest_bucket_only(admin_api, pki: Pki, slack, clock, run_daily):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    clock(not_after - timedelta(days=5, hours=2))

    assert [a["bucket"] for a in run_daily()["alerted"]] == [7]
    assert len(slack.requests) == 1


def test_a_slack_failure_fails_the_run_and_the_alert_goes_out_on_the_retry(
    admin_api, pki: Pki, slack, clock, run_daily
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    clock(not_after - timedelta(days=3))
    slack.script(Answer(500, "oops"), Answer(200, "ok"))

    with pytest.raises(Exception, match="certificate expiry alerts not sent"):
        run_daily()
    assert [a["bucket"] for a in run_daily()["alerted"]] == [7]
    assert run_daily()["alerted"] == []


def test_a_claim_left_by_a_run_that_died_before_sending_is_taken_over_later(
    admin_api, pki: Pki, slack, clock, run_daily, stack
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    now = not_after - timedelta(days=3)
    # A run claimed bucket 7 and died before sending (no sent_at).
    boto3.client("dynamodb").put_item(
        TableName=stack.table,
        Item={
            "PK": {"S": f"CERTALERT#t1#{CONNECTION}#{not_after:%Y-%m-%dT%H:%M:%SZ}#7"},
            "SK": {"S": "ALERT"},
            "created_at": {"S": f"{now:%Y-%m-%dT%H:%M:%S.%fZ}"},
        },
    )
    clock(now + timedelta(minutes=5))
    assert run_daily()["alerted"] == []  # it might still be sending

    clock(now + timedelta(minutes=20))

    assert [a["bucket"] for a in run_daily()["alerted"]] == [7]
    assert len(slack.requests) == 1


def test_days_to_expiry_is_reported_per_connection(
    admin_api, pki: Pki, slack, clock, run_daily, capsys: pytest.CaptureFixture[str]
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    clock(not_after - timedelta(days=12, hours=1))
    capsys.readouterr()

    run_daily()

    points = []
    for line in capsys.readouterr().out.splitlines():
        if line.startswith('{"_aws"') and "CertificateDaysToExpiry" in line:
            document = json.loads(line)
            points.append((document["connection_id"], document["CertificateDaysToExpiry"]))
    assert points == [(CONNECTION, [12.0])]


def test_certificates_far_from_expiry_are_not_read_or_alerted(admin_api, pki: Pki, slack, clock, run_daily):
    upload(admin_api, pki.client_pfx)
    clock(datetime.now(UTC) - timedelta(days=60))

    assert run_daily() == {"checked": 0, "alerted": []}
    assert slack.requests == []


def test_the_template_schedules_the_check_daily_at_07_utc_and_provisions_the_key(stack):
    scheduler = boto3.client("scheduler")
    names = [s["Name"] for s in scheduler.list_schedules()["Schedules"]]
    [name] = [n for n in names if n.endswith("-cert-expiry")]
    schedule = scheduler.get_schedule(Name=name)
    assert schedule["ScheduleExpression"] == "cron(0 7 * * ? *)"
    assert schedule["ScheduleExpressionTimezone"] == "UTC"
    assert schedule["Target"]["Arn"].endswith("CertExpiryFunction")

    key = boto3.client("kms").describe_key(KeyId=stack.env["HUB_CERTIFICATE_KEY_ID"])["KeyMetadata"]
    assert (key["KeyUsage"], key["KeySpec"], key["Enabled"]) == ("ENCRYPT_DECRYPT", "SYMMETRIC_DEFAULT", True)
    aliases = boto3.client("kms").list_aliases(KeyId=key["KeyId"])["Aliases"]
    assert [a["AliasName"] for a in aliases] == ["alias/hub-test-certificates"]  # per stack


def test_each_alert_sent_is_announced_once_as_connection_certificate_expiring(
    stack, admin_api, pki: Pki, slack, clock, run_daily
):
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    reader = StreamReader(stack.table)
    reader.new_records()  # what the upload wrote
    clock(not_after - timedelta(days=10))
    run_daily()
    run_daily()  # a rerun the same day sends nothing, and announces nothing

    events = [e for r in reader.new_records() for e in events_of_record(r)]

    assert [(e.type.value, e.tenant_id, e.connection_id, e.details["days_bucket"]) for e in events] == [
        ("connection.certificate_expiring", "t1", CONNECTION, 14)
    ]
    assert events[0].details["not_after"] == not_after.strftime("%Y-%m-%dT%H:%M:%SZ")


def emf_documents(output: str, metric: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in output.splitlines() if line.startswith('{"_aws"') and metric in line]


def test_the_fewest_days_left_go_out_once_per_run_for_the_expiry_alarm(
    admin_api, pki: Pki, slack, clock, run_daily, capsys: pytest.CaptureFixture[str]
):
    """CertificateExpiryAlarm (template) watches one series: `service` only, no connection."""
    not_after = not_after_of(upload(admin_api, pki.client_pfx))
    clock(not_after - timedelta(days=60))
    capsys.readouterr()
    run_daily()
    assert emf_documents(capsys.readouterr().out, expiry.MIN_METRIC) == []  # nothing within 31 days

    clock(not_after - timedelta(days=5, hours=1))
    run_daily()

    [document] = emf_documents(capsys.readouterr().out, expiry.MIN_METRIC)
    assert document[expiry.MIN_METRIC] == [5.0]  # one value per run
    [directive] = document["_aws"]["CloudWatchMetrics"]
    assert directive["Dimensions"] == [["service"]]
    assert "connection_id" not in document

    # Expired a month ago and never renewed (a retired connection's): no longer watched.
    clock(not_after + timedelta(days=expiry.RETIRED_AFTER_DAYS, hours=1))
    run_daily()
    assert emf_documents(capsys.readouterr().out, expiry.MIN_METRIC) == []
