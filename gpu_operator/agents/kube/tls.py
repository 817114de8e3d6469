"""The TLS side of a cluster configuration: which server certificates to trust, which client certificate to show.

The CA and the client certificate may be given as files or as PEM text (kubeconfig's `*-data` fields). The
standard library loads a client certificate only from files, so PEM text is written to a private temporary file
that is removed as soon as the context has read it.
"""

from __future__ import annotations

import os
import ssl
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager

from gpu_operator.agents.kube.config import ClusterConfig
from gpu_operator.agents.kube.errors import KubeConfigError

__all__ = ["ssl_context"]


@contextmanager
def _pem_file(path: str | None, text: str | None) -> Iterator[str | None]:
    """A path holding the PEM: the given file, or a private temporary copy of the text."""
    if path or not text:
        yield path
        return
    descriptor, temporary = tempfile.mkstemp(prefix="kube-", suffix=".pem")
    try:
        with os.fdopen(descriptor, "w") as stream:
            stream.write(text)
        yield temporary
    finally:
        os.unlink(temporary)


def ssl_context(config: ClusterConfig) -> ssl.SSLContext:
    """A client TLS context for the configuration (server verification and optional client certificate)."""
    context = ssl.create_default_context(ssl.Purpose.SERVER_AUTH)
    try:
        if config.insecure_skip_tls_verify:
            context.check_hostname = False
            context.verify_mode = ssl.CERT_NONE
        elif config.ca_file or config.ca_data:
            context.load_verify_locations(cafile=config.ca_file, cadata=config.ca_data)
        with (
            _pem_file(config.client_cert_file, config.client_cert_data) as certificate,
            _pem_file(config.client_key_file, config.client_key_data) as key,
        ):
            if certificate:
                context.load_cert_chain(certificate, key)
    except (OSError, ssl.SSLError) as error:
        raise KubeConfigError(f"invalid TLS configuration for {config.server}: {error}") from error
    return context
