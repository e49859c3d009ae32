"""The limits of what a broker takes: message sizes and name lengths.

Each constant is the default of the RocketMQ setting it names; the rules say what a correct broker
does at the edge. Timer values at their limits are :mod:`reference.timer`'s.
"""

from __future__ import annotations

#: MessageStoreConfig.maxMessageSize: the largest body the broker stores (4 MiB by default)
MAX_MESSAGE_SIZE = 4 * 1024 * 1024
#: DefaultMQProducer.maxMessageSize: the client's own check (Validators.checkMessage), 4 MiB
CLIENT_MAX_MESSAGE_SIZE = 4 * 1024 * 1024
#: TopicValidator.TOPIC_MAX_LENGTH (Validators.checkTopic in the client): 127 characters
TOPIC_MAX_LENGTH = 127
#: Validators.CHARACTER_MAX_LENGTH: a consumer group's name, 255 characters
GROUP_MAX_LENGTH = 255
#: the longest group whose retry topic (%RETRY% + group) is a valid topic on every supported
#: release (TopicValidator.validateTopic: 127 up to 5.3.3; 5.5.0 takes retry and DLQ topics up to
#: 255, and its client's Validators.checkGroup takes groups up to 120 only): a longer group is taken
#: by older clients, but its retry topic cannot be created everywhere
RETRY_GROUP_MAX_LENGTH = TOPIC_MAX_LENGTH - len("%RETRY%")
#: MessageExtEncoder (4.9.5+, 5.x): the encode buffer reserves this much beyond the largest body
#: for the header and the properties, so a body at maxMessageSize is stored, and so are its re-put
#: and retry copies (a few properties larger)
ENCODER_RESERVE = 64 * 1024
#: ResponseCode: the answers that say the message itself is not acceptable (not the broker's state)
MESSAGE_ILLEGAL = 13
INPUT_REFUSALS = {MESSAGE_ILLEGAL: "MESSAGE_ILLEGAL"}


def body_refusal(body_size: int, max_message_size: int = MAX_MESSAGE_SIZE,
                 client_max: int = CLIENT_MAX_MESSAGE_SIZE) -> str | None:
    """Why a body of ``body_size`` bytes is refused, or None when it is stored:
    Validators.checkMessage (the client: an empty body, or one above the producer's
    maxMessageSize, is never sent) and MessageExtEncoder.encode (4.9.5+, 5.x: a body above the
    broker's maxMessageSize; before 4.9.4 the whole encoded message had to fit, so a body at the
    limit was refused)."""
    if body_size == 0:
        return "the client refuses an empty body (Validators.checkMessage): MESSAGE_ILLEGAL"
    if body_size > client_max:
        return f"the client refuses a body above its maxMessageSize {client_max} (Validators.checkMessage): MESSAGE_ILLEGAL"
    if body_size > max_message_size:
        return f"a body of {body_size} bytes exceeds the broker's maxMessageSize {max_message_size} (MessageExtEncoder.encode): MESSAGE_ILLEGAL"
    return None


def refusal_name(code: int | None) -> str | None:
    """The name of an answer code that refuses the message itself (:data:`INPUT_REFUSALS`), else None."""
    return INPUT_REFUSALS.get(code) if code is not None else None
