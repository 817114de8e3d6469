"""The toolkit's CDI feature flags as the device plugin reads them (`--cdi-feature-flags`, `CDI_FEATURE_FLAGS`).

The known flags are nvidia-container-toolkit v1.20.0 pkg/nvcdi/api.go `FeatureFlag`; nvcdi.WithFeatureFlags
(pkg/nvcdi/options.go) reads the first release's misspelling `disable-nvsandbox-utils` as `disable-nvsandboxutils`;
k8s-device-plugin v0.20.0 cmd/nvidia-device-plugin/main.go declares both flags as string slices.
"""

from __future__ import annotations

import pytest

from gpu_operator.agents.cdi.features import FEATURE_FLAGS, UNSUPPORTED, feature_flags
from gpu_operator.agents.device_plugin.settings import SettingsError, resolve_settings

#: Every FeatureFlag constant of v1.20.0's api.go.
_V1_20_FLAGS = {"enable-explicit-driver-libraries", "disable-nvsandboxutils", "enable-coherent-annotations",
                "disable-multiple-csv-devices", "no-additional-gids-for-device-nodes", "disable-ipc-discoverer"}


def test_every_flag_of_the_toolkit_is_known_and_the_misspelling_is_read() -> None:
    assert set(FEATURE_FLAGS) | set(UNSUPPORTED) == _V1_20_FLAGS
    assert feature_flags(["disable-nvsandbox-utils", " disable-ipc-discoverer", ""]) == {
        "disable-nvsandboxutils", "disable-ipc-discoverer"}


def test_the_settings_read_both_lists_and_refuse_what_would_change_nothing() -> None:
    settings = resolve_settings({}, {"CDI_FEATURE_FLAGS": "disable-ipc-discoverer,no-additional-gids-for-device-nodes",
                                     "CDI_DISABLE_HOOKS": "all"})
    assert settings.cdi_feature_flags == {"disable-ipc-discoverer", "no-additional-gids-for-device-nodes"}
    assert settings.cdi_disable_hooks == {"all"}
    with pytest.raises(SettingsError, match=r"CDI_FEATURE_FLAGS.*'disable-ipc' is not a CDI feature flag "
                                            r"\(the flags are enable-explicit-driver-libraries"):
        resolve_settings({}, {"CDI_FEATURE_FLAGS": "disable-ipc"})
    with pytest.raises(SettingsError, match=r"'enable-coherent-annotations': this agent does not read NVML's "
                                            r"addressing mode"):
        resolve_settings({"cdi_feature_flags": "enable-coherent-annotations"}, {})
    with pytest.raises(SettingsError, match=r"CDI_DISABLE_HOOKS.*unknown CDI hook 'apply-cuda-memory-limits'"):
        resolve_settings({}, {"CDI_DISABLE_HOOKS": "apply-cuda-memory-limits"})
