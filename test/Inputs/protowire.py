"""Protobuf wire format by hand, for fixtures protobuf itself will not
write (payloads that are not there, files past its 2 GiB limit)."""


def varint(n):
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def field(num, payload):
    """A length-delimited field (wire type 2)."""
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def vint(num, value):
    """A varint field (wire type 0)."""
    return varint(num << 3) + varint(value)
