"""The protobuf wire format, read: just enough to take a `ListPodResourcesResponse` apart.

A serialized message is a run of fields, each a key (a varint: field number << 3 | wire type) and a value:
a varint (type 0), 8 bytes (1), a length-delimited run of bytes (2: strings, nested messages, packed
repeated scalars) or 4 bytes (5); types 3 and 4 (groups) are not used by proto3. Fields may come in any
order, a repeated field is its entries one after another, and a reader skips the fields it does not know,
which is how a newer kubelet's additions (dynamic resources, CPU and memory topology) pass through.

The field numbers are those of this package's `podresources.proto` (the kubelet's `v1` API). The generated
`podresources_pb2` serves the tests' fake kubelet; the exporter reads with this module instead, so it loads
no protobuf runtime (see :mod:`gpu_operator.agents.kubelet.grpc_unary` for why).
"""

from __future__ import annotations

from collections.abc import Iterator

__all__ = ["DeviceGroup", "WireError", "fields", "pod_resources"]

#: Field numbers in podresources.proto.
_RESPONSE_POD_RESOURCES = 1
_POD_NAME, _POD_NAMESPACE, _POD_CONTAINERS = 1, 2, 3
_CONTAINER_NAME, _CONTAINER_DEVICES = 1, 2
_DEVICES_RESOURCE_NAME, _DEVICES_DEVICE_IDS = 1, 2

_VARINT, _FIXED64, _LENGTH, _FIXED32 = 0, 1, 2, 5

#: (pod, namespace, container, resource name, device IDs), one per device group of a container.
DeviceGroup = tuple[str, str, str, str, tuple[str, ...]]


class WireError(ValueError):
    """The bytes are not a well-formed protobuf message of the expected shape."""


def _varint(data: memoryview, position: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if position >= len(data):
            raise WireError("a varint runs past the end of the message")
        byte = data[position]
        position += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, position
        shift += 7
        if shift >= 64:
            raise WireError("a varint is longer than 10 bytes")


def fields(data: bytes | memoryview) -> Iterator[tuple[int, int, int | memoryview]]:
    """(field number, wire type, value) for each field: an int for varints and fixed-width values, the bytes
    for length-delimited ones. Raises WireError for truncated data, groups and unknown wire types."""
    view = memoryview(data)
    position = 0
    while position < len(view):
        key, position = _varint(view, position)
        number, kind = key >> 3, key & 7
        if number == 0:
            raise WireError("field number 0 is not allowed")
        if kind == _VARINT:
            value, position = _varint(view, position)
            yield number, kind, value
        elif kind in (_FIXED64, _FIXED32):
            width = 8 if kind == _FIXED64 else 4
            if position + width > len(view):
                raise WireError(f"field {number} runs past the end of the message")
            yield number, kind, int.from_bytes(view[position:position + width], "little")
            position += width
        elif kind == _LENGTH:
            length, position = _varint(view, position)
            if position + length > len(view):
                raise WireError(f"field {number} claims {length} bytes past the end of the message")
            yield number, kind, view[position:position + length]
            position += length
        else:
            raise WireError(f"field {number} has wire type {kind}, which proto3 messages do not use")


def _text(number: int, kind: int, value: int | memoryview) -> str:
    if kind != _LENGTH or isinstance(value, int):
        raise WireError(f"string field {number} has wire type {kind}")
    try:
        return bytes(value).decode("utf-8")
    except UnicodeDecodeError as error:
        raise WireError(f"string field {number} is not UTF-8: {error}") from None


def _message(number: int, kind: int, value: int | memoryview) -> memoryview:
    if kind != _LENGTH or isinstance(value, int):
        raise WireError(f"message field {number} has wire type {kind}")
    return value


def _devices(data: memoryview) -> tuple[str, tuple[str, ...]]:
    resource, ids = "", []
    for number, kind, value in fields(data):
        if number == _DEVICES_RESOURCE_NAME:
            resource = _text(number, kind, value)
        elif number == _DEVICES_DEVICE_IDS:
            ids.append(_text(number, kind, value))
    return resource, tuple(ids)


def _container(data: memoryview) -> tuple[str, list[tuple[str, tuple[str, ...]]]]:
    name, groups = "", []
    for number, kind, value in fields(data):
        if number == _CONTAINER_NAME:
            name = _text(number, kind, value)
        elif number == _CONTAINER_DEVICES:
            groups.append(_devices(_message(number, kind, value)))
    return name, groups


def _pod(data: memoryview) -> Iterator[DeviceGroup]:
    name = namespace = ""
    containers = []
    for number, kind, value in fields(data):
        if number == _POD_NAME:
            name = _text(number, kind, value)
        elif number == _POD_NAMESPACE:
            namespace = _text(number, kind, value)
        elif number == _POD_CONTAINERS:
            containers.append(_container(_message(number, kind, value)))
    for container, groups in containers:
        for resource, ids in groups:
            yield name, namespace, container, resource, ids


def pod_resources(data: bytes) -> tuple[DeviceGroup, ...]:
    """The device groups of a serialized `ListPodResourcesResponse`, pod by pod, container by container, in the
    kubelet's order (what iterating the generated message gives). Raises WireError for malformed data."""
    return tuple(
        group
        for number, kind, value in fields(data)
        if number == _RESPONSE_POD_RESOURCES
        for group in _pod(_message(number, kind, value))
    )
