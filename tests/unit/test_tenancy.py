from hub.domain.tenancy import (
    API_KEY_PREFIX,
    ApiKey,
    Integration,
    IntegrationMode,
    MessageTypeConfig,
    UnknownMessageTypes,
    generate_api_key,
    hash_api_key,
    same_secret,
    shown_prefix,
)

INTEGRATION = Integration(integration_id="int_a", tenant_id="t1", name="ERP")


def key(**overrides) -> ApiKey:
    return ApiKey(**{"key_id": "k1", "tenant_id": "t1", "key_hash": "h", **overrides})


def test_key_of_the_same_tenant_may_use_its_integrations():
    assert key().may_use(INTEGRATION)


def test_key_of_another_tenant_may_not():
    assert not key(tenant_id="t2").may_use(INTEGRATION)


def test_key_limited_to_other_integrations_may_not():
    assert not key(integration_ids=frozenset({"int_b"})).may_use(INTEGRATION)
    assert key(integration_ids=frozenset({"int_a"})).may_use(INTEGRATION)


def test_revoked_key_may_not():
    assert not key(active=False).may_use(INTEGRATION)


def test_new_integrations_start_in_observability_mode():
    assert INTEGRATION.mode is IntegrationMode.OBSERVABILITY


def test_undeclared_message_type_gets_accept_defaults():
    config = INTEGRATION.message_type_config("order")
    assert config.duplicate_key_fields == ()
    assert config.duplicate_handling == "accept"


def test_undefined_message_types_are_refused_by_default():
    integration = INTEGRATION.model_copy(update={"message_types": {"order": MessageTypeConfig()}})

    assert integration.unknown_message_types is UnknownMessageTypes.REJECT
    assert integration.takes_message_type("order")
    assert not integration.takes_message_type("invoice")


def test_an_integration_may_accept_undefined_message_types():
    integration = Integration.model_validate(
        {"integration_id": "i", "tenant_id": "t", "name": "n", "unknown_message_types": "accept"}
    )
    assert integration.takes_message_type("anything")


def test_generated_keys_are_unique_prefixed_and_only_their_hash_is_kept():
    first, second = generate_api_key(), generate_api_key()
    assert first != second
    assert first.startswith(API_KEY_PREFIX)
    assert len(first) == len(API_KEY_PREFIX) + 43  # 256 bits, URL-safe base64
    assert hash_api_key(first) != hash_api_key(second)
    assert shown_prefix(first) == first[:12]


def test_same_secret_compares_values():
    assert same_secret("abc", "abc")
    assert not same_secret("abc", "abd")
