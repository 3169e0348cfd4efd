"""The model layer: messages, the client every component calls, its response cache and retry policy.

``pptarena.models`` re-exports the public names, so plugins keep importing
``from pptarena.models import Message, ModelClient, ...``. The modules:

- :mod:`.messages`: model references, message parts, completions, usage, model errors;
- :mod:`.client`: the backend protocol, backend options and base class, :class:`ModelClient`;
- :mod:`.cache`: the on-disk response cache; :mod:`.retry`: retries with backoff and deadlines.
"""

from pptarena.models.client import (
    Backend,
    BackendBase,
    BackendOptions,
    CallPolicy,
    ModelClient,
    ModelHub,
    policy_for,
)
from pptarena.models.messages import (
    Completion,
    ImagePart,
    Message,
    ModelError,
    ModelRef,
    Part,
    Role,
    ToolCall,
    ToolResult,
    TransientModelError,
    Usage,
    UsageBook,
    add_counts,
    check_model_ref,
    redact_secrets,
    split_model_ref,
    sum_usage,
)

__all__ = [
    "Backend",
    "BackendBase",
    "BackendOptions",
    "CallPolicy",
    "Completion",
    "ImagePart",
    "Message",
    "ModelClient",
    "ModelError",
    "ModelHub",
    "ModelRef",
    "Part",
    "Role",
    "ToolCall",
    "ToolResult",
    "TransientModelError",
    "Usage",
    "UsageBook",
    "add_counts",
    "check_model_ref",
    "policy_for",
    "redact_secrets",
    "split_model_ref",
    "sum_usage",
]
