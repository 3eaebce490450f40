from hub.domain.ids import is_message_id, new_id


def test_new_message_ids_are_recognised_and_time_ordered():
    first, second = new_id("msg"), new_id("msg")
    assert is_message_id(first)
    assert is_message_id(second)
    assert first[:14] <= second[:14]


def test_other_strings_are_not_message_ids():
    for value in (
        "",
        "msg_",
        "exe_01m8mc4s0ej491hs30btvhpq0c",
        "msg_01M8MC4S0EJ491HS30BTVHPQ0C",
        "msg_" + "0" * 27,
    ):
        assert not is_message_id(value), value
