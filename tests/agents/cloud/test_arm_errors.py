"""ARM's `Retry-After`, as RFC 9110 allows it: delta-seconds or an HTTP date."""

from __future__ import annotations

import email.utils
import time

import pytest

from gpu_operator.agents.cloud.arm_errors import retry_after_seconds


@pytest.mark.parametrize(("header", "seconds"), [("17", 17.0), ("0", 0.0), ("-3", 0.0), (None, None), ("", None),
                                                  ("soon", None)])
def test_retry_after_in_seconds(header: str | None, seconds: float | None) -> None:
    assert retry_after_seconds(header) == seconds


def test_retry_after_as_a_date_is_the_time_until_it() -> None:
    later = email.utils.formatdate(time.time() + 3600, usegmt=True)
    assert 3500 < (retry_after_seconds(later) or 0) <= 3600
    assert retry_after_seconds(email.utils.formatdate(time.time() - 60, usegmt=True)) == 0.0
