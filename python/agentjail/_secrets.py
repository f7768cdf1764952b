"""Secrets (docs/secrets.md) as the library and serve read them, with no C
library: the local Sandbox, agentjail.connect() and ServeClient share it."""
import json

from .errors import ConfigError


class Secrets:
    """Secrets as the library reads them (docs/secrets.md): a list of dicts
    ({"name", "value", "hosts", "header", "format"} or {"name", "value",
    "hosts", "placeholder": True}), held as one JSON text. Write-only:
    nothing gives a value back; repr and names show the names alone.
    Python checks only the shape (a list of dicts of JSON values);
    aj_config_validate judges the fields, in its own words."""

    __slots__ = ("names", "_text")

    def __init__(self, value):
        if isinstance(value, (str, bytes, dict)) or not isinstance(value, (list, tuple)):
            raise ConfigError('secrets: must be a list of dicts ({"name", "value", "hosts", '
                              f'...}}: docs/secrets.md), not {type(value).__name__}')
        names = []
        for i, item in enumerate(value, 1):
            if not isinstance(item, dict):
                raise ConfigError(f"secrets: item {i} is not a dict (a {type(item).__name__})")
            for field, v in item.items():
                if not isinstance(field, str):
                    raise ConfigError(f"secrets: item {i}: field names must be strings, "
                                      f"not {type(field).__name__}")
                try:
                    json.dumps(v, allow_nan=False)
                except (TypeError, ValueError):
                    # The type alone: the text of a value is never shown.
                    raise ConfigError(f"secrets: item {i}: \"{field}\" must be a string, "
                                      f"a list of strings or True/False, not "
                                      f"{type(v).__name__}") from None
            name = item.get("name")
            names.append(name if isinstance(name, str) else f"item {i}")
        self.names = tuple(names)
        self._text = json.dumps(list(value), allow_nan=False)

    def items(self):
        """The list of dicts again, for a request body (serve's "secrets")."""
        return json.loads(self._text)

    def scrub(self, text):
        """text with every value of these secrets replaced by <redacted>: a
        last guard on a message (the library's never holds one)."""
        values = sorted((v for v in (s.get("value") for s in self.items())
                         if isinstance(v, str) and len(v) >= 4), key=len, reverse=True)
        for v in values:
            text = text.replace(v, "<redacted>")
        return text

    def __repr__(self):
        return f"<secrets {', '.join(self.names) or '(none)'}: values redacted>"
