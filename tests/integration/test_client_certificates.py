"""Client certificates (issue 5) through the real admin handler on mock_aws (stack from
template.yaml): upload checks, KMS envelope encryption, no secret at rest or in logs, and an
mTLS delivery by the real worker with the stored certificate."""

from __future__ import annotations

import base64
import json
import logging
from typing import Any

import boto3
import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.serialization import pkcs12

from hub.adapters.certificates import DynamoCertificateRepository
from hub.adapters.dynamo.keys import certificate_key
from hub.adapters.kms import KmsDataKeys
from hub.certificates.envelope import CertificateUndecryptable, open_sealed, seal
from hub.certificates.service import encryption_context
from tests.pipeline import configure, send, status
from tests.pki import PFX_PASSWORD, Pki

CONNECTION = "conn_sefaz_sp"
PATH = f"/api/admin/connections/{CONNECTION}/certificate"


@pytest.fixture(autouse=True)
def tenant_t1(stack: Any, admin_api: Any) -> None:
    """A certificate belongs to a tenant that exists (an upload for an unknown one is 404)."""
    created = admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t1", "name": "T1"})
    assert created.status == 201, created.body


def upload(admin_api: Any, pfx: bytes, password: bytes = PFX_PASSWORD, *, tenant_id: str = "t1") -> Any:
    body = {
        "tenant_id": tenant_id,
        "pkcs12_base64": base64.b64encode(pfx).decode(),
        "password": password.decode(),
    }
    return admin_api("POST", PATH, body=body)


def mismatched_pfx(pki: Pki) -> bytes:
    """Another certificate's key beside the client certificate (cryptography refuses to bind a
    key to a certificate that is not its own, so the certificate rides along unbound)."""
    return pkcs12.serialize_key_and_certificates(
        b"client",
        pki.foreign_client.key,
        None,
        [pki.client.cert],
        serialization.BestAvailableEncryption(PFX_PASSWORD),
    )


class TestUpload:
    def test_a_valid_certificate_is_stored_and_answers_its_public_metadata(self, stack, admin_api, pki):
        answer = upload(admin_api, pki.client_pfx)

        assert answer.status == 201, answer.body
        view = answer.body
        assert view["subject"] == pki.client.subject
        assert view["issuer"] == pki.ca.subject
        assert view["serial"] == format(pki.client.cert.serial_number, "x")
        assert view["not_after"] == pki.client.cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert view["cert_expires_in_days"] in (29, 30)
        assert view["level"] == "warning"
        assert set(view) == {
            "tenant_id",
            "connection_id",
            "subject",
            "issuer",
            "serial",
            "not_before",
            "not_after",
            "cert_expires_in_days",
            "level",
        }

        described = admin_api("GET", PATH, query={"tenant_id": "t1"})
        assert described.status == 200
        assert described.body == view

    def test_another_tenant_neither_sees_nor_replaces_the_certificate(self, stack, admin_api, pki):
        """Connection ids are unique within a tenant only (issue 27, point 7): t2 uploading under
        t1's connection id stores t2's own certificate; t1's stays as it was."""
        assert admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t2", "name": "T2"}).status == 201
        mine = upload(admin_api, pki.client_pfx)
        assert mine.status == 201

        assert admin_api("GET", PATH, query={"tenant_id": "t2"}).status == 404
        theirs = upload(admin_api, pki.foreign_client_pfx, tenant_id="t2")
        assert theirs.status == 201, theirs.body

        assert theirs.body["tenant_id"] == "t2"
        assert theirs.body["serial"] != mine.body["serial"]
        assert admin_api("GET", PATH, query={"tenant_id": "t1"}).body["serial"] == mine.body["serial"]
        assert admin_api("GET", PATH, query={"tenant_id": "t2"}).body["serial"] == theirs.body["serial"]

    def test_an_upload_under_the_id_of_another_tenants_connection_is_this_tenants_own(
        self, stack, admin_api, pki
    ):
        """Uploading before the connection exists is the SEFAZ form's order (issue 13). Another
        tenant's connection of the same id is another resource: nothing tells t1 it exists, and
        t2 still uploads its own certificate."""
        assert admin_api("POST", "/api/admin/tenants", body={"tenant_id": "t2", "name": "T2"}).status == 201
        theirs = {"connection_id": CONNECTION, "url": "https://erp.example/in"}
        assert admin_api("POST", "/api/admin/tenants/t2/connections", body=theirs).status == 201

        first = upload(admin_api, pki.client_pfx, tenant_id="t1")
        own = upload(admin_api, pki.client_pfx, tenant_id="t2")

        assert (first.status, first.body["tenant_id"]) == (201, "t1")
        assert own.status == 201, own.body
        assert own.body["tenant_id"] == "t2"

    def test_an_upload_for_a_tenant_that_does_not_exist_is_404_and_stores_nothing(
        self, stack, admin_api, pki
    ):
        answer = upload(admin_api, pki.client_pfx, tenant_id="tnt_nobody")

        assert (answer.status, answer.body["error"]["code"]) == (404, "not_found")
        assert answer.body["error"]["details"] == {"tenant_id": "tnt_nobody"}
        assert DynamoCertificateRepository(stack.table).get("tnt_nobody", CONNECTION) is None
        # Once the tenant exists, the same upload works (before its connection: the SEFAZ order).
        assert (
            admin_api("POST", "/api/admin/tenants", body={"tenant_id": "tnt_nobody", "name": "N"}).status
            == 201
        )
        assert upload(admin_api, pki.client_pfx, tenant_id="tnt_nobody").status == 201

    def test_a_wrong_password_is_400_certificate_password_invalid(self, stack, admin_api, pki):
        answer = upload(admin_api, pki.client_pfx, b"not-the-password")

        assert answer.status == 400
        assert answer.body["error"]["code"] == "certificate_password_invalid"
        assert admin_api("GET", PATH, query={"tenant_id": "t1"}).status == 404

    def test_an_expired_certificate_is_400_with_its_not_after(self, stack, admin_api, pki):
        answer = upload(admin_api, pki.expired_client_pfx)

        assert answer.status == 400
        assert answer.body["error"]["code"] == "certificate_expired"
        expected = pki.expired_client.cert.not_valid_after_utc.strftime("%Y-%m-%dT%H:%M:%SZ")
        assert answer.body["error"]["details"] == {"not_after": expected}

    def test_a_key_that_is_not_the_certificates_is_400_certificate_key_mismatch(self, stack, admin_api, pki):
        answer = upload(admin_api, mismatched_pfx(pki))
        assert (answer.status, answer.body["error"]["code"]) == (400, "certificate_key_mismatch")

        no_key = pkcs12.serialize_key_and_certificates(
            b"client", None, pki.client.cert, [], serialization.BestAvailableEncryption(PFX_PASSWORD)
        )
        answer = upload(admin_api, no_key)
        assert (answer.status, answer.body["error"]["code"]) == (400, "certificate_key_mismatch")

    def test_a_legacy_3des_sha1_a1_file_loads(self, stack, admin_api, pki):
        answer = upload(admin_api, pki.legacy_client_pfx)

        assert answer.status == 201, answer.body
        assert answer.body["subject"] == pki.client.subject

    def test_bad_input_and_no_token(self, stack, admin_api, pki):
        not_base64 = admin_api(
            "POST", PATH, body={"tenant_id": "t1", "pkcs12_base64": "@@@@", "password": "x"}
        )
        assert (not_base64.status, not_base64.body["error"]["code"]) == (400, "certificate_invalid")
        missing = admin_api("POST", PATH, body={"tenant_id": "t1"})
        assert (missing.status, missing.body["error"]["code"]) == (400, "validation_error")
        assert admin_api("GET", PATH, token=None, query={"tenant_id": "t1"}).status == 401


class TestEnvelopeEncryption:
    def test_round_trip_on_kms_and_another_context_does_not_open(self, stack):
        keys = KmsDataKeys(stack.env["HUB_CERTIFICATE_KEY_ID"])
        context = encryption_context("t1", CONNECTION)

        sealed = seal(keys, context, b"pfx bytes", b"pfx password")

        assert open_sealed(keys, sealed, context) == (b"pfx bytes", b"pfx password")
        assert sealed.algorithm == "AES-256-GCM"
        assert b"pfx bytes" not in sealed.pfx_ciphertext
        for other in (encryption_context("t2", CONNECTION), encryption_context("t1", "conn_other")):
            with pytest.raises(CertificateUndecryptable):
                open_sealed(keys, sealed, other)
            # KMS itself refuses the data key under another context (not only the GCM tag).
            with pytest.raises(CertificateUndecryptable):
                keys.decrypt(sealed.encrypted_data_key, other)

    def test_the_stored_item_records_key_id_data_key_nonces_and_context(self, stack, admin_api, pki):
        assert upload(admin_api, pki.client_pfx).status == 201

        item = boto3.client("dynamodb").get_item(
            TableName=stack.table, Key={k: {"S": v} for k, v in certificate_key("t1", CONNECTION).items()}
        )["Item"]
        key_arn = boto3.client("kms").describe_key(KeyId=stack.env["HUB_CERTIFICATE_KEY_ID"])["KeyMetadata"][
            "Arn"
        ]
        assert item["kms_key_id"]["S"] in (key_arn, stack.env["HUB_CERTIFICATE_KEY_ID"])
        assert item["encryption_context"]["M"] == {
            "tenant_id": {"S": "t1"},
            "connection_id": {"S": CONNECTION},
        }
        for name in (
            "encrypted_data_key",
            "pfx_nonce",
            "pfx_ciphertext",
            "password_nonce",
            "password_ciphertext",
        ):
            assert "B" in item[name]
        assert item["algorithm"]["S"] == "AES-256-GCM"
        stored = DynamoCertificateRepository(stack.table).get("t1", CONNECTION)
        assert stored is not None
        assert stored.metadata.subject == pki.client.subject


def test_no_password_pfx_or_private_key_lands_in_the_table_a_log_or_an_answer(
    stack, admin_api, pki, caplog: pytest.LogCaptureFixture, capsys: pytest.CaptureFixture[str]
):
    caplog.set_level(logging.DEBUG)
    password = b"s3cret-A1-password-for-the-scan"
    pfx = pkcs12.serialize_key_and_certificates(
        b"client",
        pki.client.key,
        pki.client.cert,
        [pki.ca.cert],
        serialization.BestAvailableEncryption(password),
    )
    answers = [
        upload(admin_api, pfx, password),
        upload(admin_api, pfx, b"wrong-" + password),
        admin_api("GET", PATH, query={"tenant_id": "t1"}),
    ]
    assert answers[0].status == 201

    table = json.dumps(stack.scan(), default=str)
    raw_items = repr(stack.scan())  # binary attributes as bytes
    captured = capsys.readouterr()
    seen = [table, raw_items, caplog.text, captured.out, captured.err] + [json.dumps(a.body) for a in answers]
    secrets = [
        password.decode(),
        base64.b64encode(pfx).decode(),
        base64.b64encode(pfx).decode()[:64],
        "PRIVATE KEY",
        repr(pfx[:48])[2:-1],
    ]
    for text in seen:
        for secret in secrets:
            assert secret not in text


class TestMtlsDelivery:
    @pytest.fixture
    def trusted_test_ca(self, pki: Pki, tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The worker trusts the system store; here that is the test CA (OpenSSL's SSL_CERT_FILE)."""
        ca = tmp_path / "trust.pem"
        ca.write_bytes(pki.ca.cert_pem)
        monkeypatch.setenv("SSL_CERT_FILE", str(ca))

    def test_a_message_is_sent_with_the_uploaded_certificate(
        self, stack, tenancy, admin_api, ingest_api, worker, mtls_server, pki, trusted_test_ca
    ):
        assert upload(admin_api, pki.legacy_client_pfx).status == 201
        configure(stack, tenancy, mtls_server, connection_id=CONNECTION, client_certificate_id=CONNECTION)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-MTLS"})

        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["dest_status"]) == ("sent", "200")
        [seen] = mtls_server.requests
        assert "Hub Test Client" in str(seen.client_subject)

    def test_without_an_uploaded_certificate_it_is_error_tls(
        self, stack, tenancy, ingest_api, worker, mtls_server, trusted_test_ca
    ):
        configure(stack, tenancy, mtls_server, connection_id=CONNECTION, client_certificate_id=CONNECTION)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-NOCERT"})

        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "tls")
        assert "no client certificate uploaded" in final["dest_status_text"]
        assert mtls_server.requests == []

    def test_another_tenants_certificate_is_never_presented(
        self, stack, tenancy, admin_api, ingest_api, worker, mtls_server, pki, trusted_test_ca
    ):
        foreign = "conn_of_t2"
        body = {
            "tenant_id": "t2",
            "pkcs12_base64": base64.b64encode(pki.client_pfx).decode(),
            "password": PFX_PASSWORD.decode(),
        }
        assert admin_api("POST", f"/api/admin/connections/{foreign}/certificate", body=body).status == 201
        # t1's integration names t2's connection as its certificate.
        configure(stack, tenancy, mtls_server, client_certificate_id=foreign)
        message_id = send(ingest_api, tenancy, {"po_number": "PO-FOREIGN"})

        worker()

        final = status(stack, message_id)
        assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "tls")
        assert mtls_server.requests == []


def test_a_certificate_record_copied_under_another_connection_is_never_presented(
    stack, tenancy, admin_api, ingest_api, worker, mtls_server, pki, monkeypatch, tmp_path
):
    ca = tmp_path / "trust.pem"
    ca.write_bytes(pki.ca.cert_pem)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))
    assert upload(admin_api, pki.client_pfx).status == 201
    dynamodb = boto3.client("dynamodb")
    [item] = [i for i in stack.scan() if i["PK"]["S"] == f"CERT#t1#{CONNECTION}"]
    # Someone with write access to the table copies the record under another connection's key.
    dynamodb.put_item(TableName=stack.table, Item={**item, "PK": {"S": "CERT#t1#conn_copy"}})
    configure(stack, tenancy, mtls_server, client_certificate_id="conn_copy")
    message_id = send(ingest_api, tenancy, {"po_number": "PO-COPY"})

    worker()

    final = status(stack, message_id)
    assert (final["pipeline_status"], final["last_retry_error_class"]) == ("error", "tls")
    assert mtls_server.requests == []
