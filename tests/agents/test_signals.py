"""Signals become queue items the main loop waits on."""

from __future__ import annotations

import os
import signal

from gpu_operator.agents.signals import SignalQueue


def test_a_real_signal_is_received_and_handlers_are_restored() -> None:
    before = signal.getsignal(signal.SIGHUP)
    with SignalQueue() as signals:
        os.kill(os.getpid(), signal.SIGHUP)
        assert signals.wait(5) == signal.SIGHUP
        assert signals.wait(0.01) is None
    assert signal.getsignal(signal.SIGHUP) is before
