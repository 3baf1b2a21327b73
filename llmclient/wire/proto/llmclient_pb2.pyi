from google.protobuf.internal import containers as _containers
from google.protobuf import descriptor as _descriptor
from google.protobuf import message as _message
from collections.abc import Iterable as _Iterable, Mapping as _Mapping
from typing import ClassVar as _ClassVar, Optional as _Optional, Union as _Union

DESCRIPTOR: _descriptor.FileDescriptor

class ImageUrl(_message.Message):
    __slots__ = ("url", "detail", "nulls", "extra", "empty")
    URL_FIELD_NUMBER: _ClassVar[int]
    DETAIL_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    url: str
    detail: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, url: _Optional[str] = ..., detail: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class InputAudio(_message.Message):
    __slots__ = ("data", "format", "nulls", "extra", "empty")
    DATA_FIELD_NUMBER: _ClassVar[int]
    FORMAT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    data: str
    format: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, data: _Optional[str] = ..., format: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class FileRef(_message.Message):
    __slots__ = ("file_data", "file_id", "filename", "nulls", "extra", "empty")
    FILE_DATA_FIELD_NUMBER: _ClassVar[int]
    FILE_ID_FIELD_NUMBER: _ClassVar[int]
    FILENAME_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    file_data: str
    file_id: str
    filename: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, file_data: _Optional[str] = ..., file_id: _Optional[str] = ..., filename: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ContentPart(_message.Message):
    __slots__ = ("type", "text", "image_url", "input_audio", "file", "refusal", "nulls", "extra", "empty")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    TEXT_FIELD_NUMBER: _ClassVar[int]
    IMAGE_URL_FIELD_NUMBER: _ClassVar[int]
    INPUT_AUDIO_FIELD_NUMBER: _ClassVar[int]
    FILE_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    type: str
    text: str
    image_url: ImageUrl
    input_audio: InputAudio
    file: FileRef
    refusal: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[str] = ..., text: _Optional[str] = ..., image_url: _Optional[_Union[ImageUrl, _Mapping]] = ..., input_audio: _Optional[_Union[InputAudio, _Mapping]] = ..., file: _Optional[_Union[FileRef, _Mapping]] = ..., refusal: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class FunctionCall(_message.Message):
    __slots__ = ("name", "arguments", "nulls", "extra", "empty")
    NAME_FIELD_NUMBER: _ClassVar[int]
    ARGUMENTS_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    name: str
    arguments: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., arguments: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ToolCall(_message.Message):
    __slots__ = ("index", "id", "type", "function", "nulls", "extra", "empty")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    ID_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    index: int
    id: str
    type: str
    function: FunctionCall
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, index: _Optional[int] = ..., id: _Optional[str] = ..., type: _Optional[str] = ..., function: _Optional[_Union[FunctionCall, _Mapping]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ChatMessage(_message.Message):
    __slots__ = ("role", "content", "content_parts", "name", "tool_calls", "tool_call_id", "refusal", "function_call", "reasoning_content", "nulls", "audio", "annotations", "content_json", "extra", "empty")
    ROLE_FIELD_NUMBER: _ClassVar[int]
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    CONTENT_PARTS_FIELD_NUMBER: _ClassVar[int]
    NAME_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CALL_ID_FIELD_NUMBER: _ClassVar[int]
    REFUSAL_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_CALL_FIELD_NUMBER: _ClassVar[int]
    REASONING_CONTENT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    ANNOTATIONS_FIELD_NUMBER: _ClassVar[int]
    CONTENT_JSON_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    role: str
    content: str
    content_parts: _containers.RepeatedCompositeFieldContainer[ContentPart]
    name: str
    tool_calls: _containers.RepeatedCompositeFieldContainer[ToolCall]
    tool_call_id: str
    refusal: str
    function_call: FunctionCall
    reasoning_content: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    audio: bytes
    annotations: bytes
    content_json: bytes
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, role: _Optional[str] = ..., content: _Optional[str] = ..., content_parts: _Optional[_Iterable[_Union[ContentPart, _Mapping]]] = ..., name: _Optional[str] = ..., tool_calls: _Optional[_Iterable[_Union[ToolCall, _Mapping]]] = ..., tool_call_id: _Optional[str] = ..., refusal: _Optional[str] = ..., function_call: _Optional[_Union[FunctionCall, _Mapping]] = ..., reasoning_content: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., audio: _Optional[bytes] = ..., annotations: _Optional[bytes] = ..., content_json: _Optional[bytes] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class FunctionDef(_message.Message):
    __slots__ = ("name", "description", "parameters", "strict", "nulls", "extra", "empty")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    PARAMETERS_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    parameters: bytes
    strict: bool
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., parameters: _Optional[bytes] = ..., strict: _Optional[bool] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Tool(_message.Message):
    __slots__ = ("type", "function", "nulls", "extra", "empty")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    type: str
    function: FunctionDef
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[str] = ..., function: _Optional[_Union[FunctionDef, _Mapping]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class JsonSchemaFormat(_message.Message):
    __slots__ = ("name", "description", "schema", "strict", "nulls", "extra", "empty")
    NAME_FIELD_NUMBER: _ClassVar[int]
    DESCRIPTION_FIELD_NUMBER: _ClassVar[int]
    SCHEMA_FIELD_NUMBER: _ClassVar[int]
    STRICT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    name: str
    description: str
    schema: bytes
    strict: bool
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, name: _Optional[str] = ..., description: _Optional[str] = ..., schema: _Optional[bytes] = ..., strict: _Optional[bool] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ResponseFormat(_message.Message):
    __slots__ = ("type", "json_schema", "nulls", "extra", "empty")
    TYPE_FIELD_NUMBER: _ClassVar[int]
    JSON_SCHEMA_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    type: str
    json_schema: JsonSchemaFormat
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, type: _Optional[str] = ..., json_schema: _Optional[_Union[JsonSchemaFormat, _Mapping]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class StreamOptions(_message.Message):
    __slots__ = ("include_usage", "include_obfuscation", "nulls", "extra", "empty")
    INCLUDE_USAGE_FIELD_NUMBER: _ClassVar[int]
    INCLUDE_OBFUSCATION_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    include_usage: bool
    include_obfuscation: bool
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, include_usage: _Optional[bool] = ..., include_obfuscation: _Optional[bool] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ChatCompletionRequest(_message.Message):
    __slots__ = ("model", "messages", "stream", "temperature", "top_p", "max_tokens", "max_completion_tokens", "n", "stop", "stop_list", "presence_penalty", "frequency_penalty", "seed", "user", "nulls", "tools", "tool_choice", "parallel_tool_calls", "response_format", "stream_options", "logprobs", "top_logprobs", "logit_bias", "metadata", "store", "service_tier", "reasoning_effort", "modalities", "audio", "prediction", "web_search_options", "prompt_cache_key", "safety_identifier", "verbosity", "functions", "function_call", "stop_json", "extra", "empty")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    MESSAGES_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_LIST_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    TOOLS_FIELD_NUMBER: _ClassVar[int]
    TOOL_CHOICE_FIELD_NUMBER: _ClassVar[int]
    PARALLEL_TOOL_CALLS_FIELD_NUMBER: _ClassVar[int]
    RESPONSE_FORMAT_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    TOP_LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    LOGIT_BIAS_FIELD_NUMBER: _ClassVar[int]
    METADATA_FIELD_NUMBER: _ClassVar[int]
    STORE_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIER_FIELD_NUMBER: _ClassVar[int]
    REASONING_EFFORT_FIELD_NUMBER: _ClassVar[int]
    MODALITIES_FIELD_NUMBER: _ClassVar[int]
    AUDIO_FIELD_NUMBER: _ClassVar[int]
    PREDICTION_FIELD_NUMBER: _ClassVar[int]
    WEB_SEARCH_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_CACHE_KEY_FIELD_NUMBER: _ClassVar[int]
    SAFETY_IDENTIFIER_FIELD_NUMBER: _ClassVar[int]
    VERBOSITY_FIELD_NUMBER: _ClassVar[int]
    FUNCTIONS_FIELD_NUMBER: _ClassVar[int]
    FUNCTION_CALL_FIELD_NUMBER: _ClassVar[int]
    STOP_JSON_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    model: str
    messages: _containers.RepeatedCompositeFieldContainer[ChatMessage]
    stream: bool
    temperature: float
    top_p: float
    max_tokens: int
    max_completion_tokens: int
    n: int
    stop: str
    stop_list: _containers.RepeatedScalarFieldContainer[str]
    presence_penalty: float
    frequency_penalty: float
    seed: int
    user: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    tools: _containers.RepeatedCompositeFieldContainer[Tool]
    tool_choice: bytes
    parallel_tool_calls: bool
    response_format: ResponseFormat
    stream_options: StreamOptions
    logprobs: bool
    top_logprobs: int
    logit_bias: bytes
    metadata: bytes
    store: bool
    service_tier: str
    reasoning_effort: str
    modalities: _containers.RepeatedScalarFieldContainer[str]
    audio: bytes
    prediction: bytes
    web_search_options: bytes
    prompt_cache_key: str
    safety_identifier: str
    verbosity: str
    functions: bytes
    function_call: bytes
    stop_json: bytes
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, model: _Optional[str] = ..., messages: _Optional[_Iterable[_Union[ChatMessage, _Mapping]]] = ..., stream: _Optional[bool] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., max_tokens: _Optional[int] = ..., max_completion_tokens: _Optional[int] = ..., n: _Optional[int] = ..., stop: _Optional[str] = ..., stop_list: _Optional[_Iterable[str]] = ..., presence_penalty: _Optional[float] = ..., frequency_penalty: _Optional[float] = ..., seed: _Optional[int] = ..., user: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., tools: _Optional[_Iterable[_Union[Tool, _Mapping]]] = ..., tool_choice: _Optional[bytes] = ..., parallel_tool_calls: _Optional[bool] = ..., response_format: _Optional[_Union[ResponseFormat, _Mapping]] = ..., stream_options: _Optional[_Union[StreamOptions, _Mapping]] = ..., logprobs: _Optional[bool] = ..., top_logprobs: _Optional[int] = ..., logit_bias: _Optional[bytes] = ..., metadata: _Optional[bytes] = ..., store: _Optional[bool] = ..., service_tier: _Optional[str] = ..., reasoning_effort: _Optional[str] = ..., modalities: _Optional[_Iterable[str]] = ..., audio: _Optional[bytes] = ..., prediction: _Optional[bytes] = ..., web_search_options: _Optional[bytes] = ..., prompt_cache_key: _Optional[str] = ..., safety_identifier: _Optional[str] = ..., verbosity: _Optional[str] = ..., functions: _Optional[bytes] = ..., function_call: _Optional[bytes] = ..., stop_json: _Optional[bytes] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class CompletionRequest(_message.Message):
    __slots__ = ("model", "prompt", "prompt_list", "prompt_tokens", "max_tokens", "temperature", "top_p", "stream", "n", "stop", "stop_list", "seed", "user", "presence_penalty", "nulls", "frequency_penalty", "best_of", "echo", "logprobs", "suffix", "logit_bias", "stream_options", "prompt_json", "stop_json", "extra", "empty")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    PROMPT_FIELD_NUMBER: _ClassVar[int]
    PROMPT_LIST_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    MAX_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TEMPERATURE_FIELD_NUMBER: _ClassVar[int]
    TOP_P_FIELD_NUMBER: _ClassVar[int]
    STREAM_FIELD_NUMBER: _ClassVar[int]
    N_FIELD_NUMBER: _ClassVar[int]
    STOP_FIELD_NUMBER: _ClassVar[int]
    STOP_LIST_FIELD_NUMBER: _ClassVar[int]
    SEED_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    PRESENCE_PENALTY_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    FREQUENCY_PENALTY_FIELD_NUMBER: _ClassVar[int]
    BEST_OF_FIELD_NUMBER: _ClassVar[int]
    ECHO_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    SUFFIX_FIELD_NUMBER: _ClassVar[int]
    LOGIT_BIAS_FIELD_NUMBER: _ClassVar[int]
    STREAM_OPTIONS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_JSON_FIELD_NUMBER: _ClassVar[int]
    STOP_JSON_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    model: str
    prompt: str
    prompt_list: _containers.RepeatedScalarFieldContainer[str]
    prompt_tokens: _containers.RepeatedScalarFieldContainer[int]
    max_tokens: int
    temperature: float
    top_p: float
    stream: bool
    n: int
    stop: str
    stop_list: _containers.RepeatedScalarFieldContainer[str]
    seed: int
    user: str
    presence_penalty: float
    nulls: _containers.RepeatedScalarFieldContainer[int]
    frequency_penalty: float
    best_of: int
    echo: bool
    logprobs: int
    suffix: str
    logit_bias: bytes
    stream_options: StreamOptions
    prompt_json: bytes
    stop_json: bytes
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, model: _Optional[str] = ..., prompt: _Optional[str] = ..., prompt_list: _Optional[_Iterable[str]] = ..., prompt_tokens: _Optional[_Iterable[int]] = ..., max_tokens: _Optional[int] = ..., temperature: _Optional[float] = ..., top_p: _Optional[float] = ..., stream: _Optional[bool] = ..., n: _Optional[int] = ..., stop: _Optional[str] = ..., stop_list: _Optional[_Iterable[str]] = ..., seed: _Optional[int] = ..., user: _Optional[str] = ..., presence_penalty: _Optional[float] = ..., nulls: _Optional[_Iterable[int]] = ..., frequency_penalty: _Optional[float] = ..., best_of: _Optional[int] = ..., echo: _Optional[bool] = ..., logprobs: _Optional[int] = ..., suffix: _Optional[str] = ..., logit_bias: _Optional[bytes] = ..., stream_options: _Optional[_Union[StreamOptions, _Mapping]] = ..., prompt_json: _Optional[bytes] = ..., stop_json: _Optional[bytes] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Usage(_message.Message):
    __slots__ = ("prompt_tokens", "completion_tokens", "total_tokens", "prompt_tokens_details", "completion_tokens_details", "nulls", "extra", "empty")
    PROMPT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_FIELD_NUMBER: _ClassVar[int]
    TOTAL_TOKENS_FIELD_NUMBER: _ClassVar[int]
    PROMPT_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_TOKENS_DETAILS_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    prompt_tokens: int
    completion_tokens: int
    total_tokens: int
    prompt_tokens_details: bytes
    completion_tokens_details: bytes
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, prompt_tokens: _Optional[int] = ..., completion_tokens: _Optional[int] = ..., total_tokens: _Optional[int] = ..., prompt_tokens_details: _Optional[bytes] = ..., completion_tokens_details: _Optional[bytes] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ChatChoice(_message.Message):
    __slots__ = ("index", "message", "delta", "finish_reason", "logprobs", "nulls", "extra", "empty")
    INDEX_FIELD_NUMBER: _ClassVar[int]
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    DELTA_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    index: int
    message: ChatMessage
    delta: ChatMessage
    finish_reason: str
    logprobs: bytes
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, index: _Optional[int] = ..., message: _Optional[_Union[ChatMessage, _Mapping]] = ..., delta: _Optional[_Union[ChatMessage, _Mapping]] = ..., finish_reason: _Optional[str] = ..., logprobs: _Optional[bytes] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ChatCompletion(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "service_tier", "nulls", "extra", "empty")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    SERVICE_TIER_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[ChatChoice]
    usage: Usage
    system_fingerprint: str
    service_tier: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[ChatChoice, _Mapping]]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ..., service_tier: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class CompletionChoice(_message.Message):
    __slots__ = ("text", "index", "finish_reason", "logprobs", "nulls", "extra", "empty")
    TEXT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    FINISH_REASON_FIELD_NUMBER: _ClassVar[int]
    LOGPROBS_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    text: str
    index: int
    finish_reason: str
    logprobs: bytes
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, text: _Optional[str] = ..., index: _Optional[int] = ..., finish_reason: _Optional[str] = ..., logprobs: _Optional[bytes] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Completion(_message.Message):
    __slots__ = ("id", "object", "created", "model", "choices", "usage", "system_fingerprint", "nulls", "extra", "empty")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    CHOICES_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    SYSTEM_FINGERPRINT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    model: str
    choices: _containers.RepeatedCompositeFieldContainer[CompletionChoice]
    usage: Usage
    system_fingerprint: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., model: _Optional[str] = ..., choices: _Optional[_Iterable[_Union[CompletionChoice, _Mapping]]] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., system_fingerprint: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class EmbeddingRequest(_message.Message):
    __slots__ = ("model", "input", "input_list", "input_tokens", "encoding_format", "dimensions", "user", "input_json", "nulls", "extra", "empty")
    MODEL_FIELD_NUMBER: _ClassVar[int]
    INPUT_FIELD_NUMBER: _ClassVar[int]
    INPUT_LIST_FIELD_NUMBER: _ClassVar[int]
    INPUT_TOKENS_FIELD_NUMBER: _ClassVar[int]
    ENCODING_FORMAT_FIELD_NUMBER: _ClassVar[int]
    DIMENSIONS_FIELD_NUMBER: _ClassVar[int]
    USER_FIELD_NUMBER: _ClassVar[int]
    INPUT_JSON_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    model: str
    input: str
    input_list: _containers.RepeatedScalarFieldContainer[str]
    input_tokens: _containers.RepeatedScalarFieldContainer[int]
    encoding_format: str
    dimensions: int
    user: str
    input_json: bytes
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, model: _Optional[str] = ..., input: _Optional[str] = ..., input_list: _Optional[_Iterable[str]] = ..., input_tokens: _Optional[_Iterable[int]] = ..., encoding_format: _Optional[str] = ..., dimensions: _Optional[int] = ..., user: _Optional[str] = ..., input_json: _Optional[bytes] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Embedding(_message.Message):
    __slots__ = ("object", "index", "embedding_f32", "embedding_base64", "nulls", "extra", "empty")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    INDEX_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_F32_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_BASE64_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    object: str
    index: int
    embedding_f32: bytes
    embedding_base64: bytes
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, object: _Optional[str] = ..., index: _Optional[int] = ..., embedding_f32: _Optional[bytes] = ..., embedding_base64: _Optional[bytes] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class EmbeddingResponse(_message.Message):
    __slots__ = ("object", "data", "model", "usage", "nulls", "extra", "empty")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    USAGE_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Embedding]
    model: str
    usage: Usage
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Embedding, _Mapping]]] = ..., model: _Optional[str] = ..., usage: _Optional[_Union[Usage, _Mapping]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Model(_message.Message):
    __slots__ = ("id", "object", "created", "owned_by", "nulls", "extra", "empty")
    ID_FIELD_NUMBER: _ClassVar[int]
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    CREATED_FIELD_NUMBER: _ClassVar[int]
    OWNED_BY_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    id: str
    object: str
    created: int
    owned_by: str
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, id: _Optional[str] = ..., object: _Optional[str] = ..., created: _Optional[int] = ..., owned_by: _Optional[str] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ModelList(_message.Message):
    __slots__ = ("object", "data", "nulls", "extra", "empty")
    OBJECT_FIELD_NUMBER: _ClassVar[int]
    DATA_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    object: str
    data: _containers.RepeatedCompositeFieldContainer[Model]
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, object: _Optional[str] = ..., data: _Optional[_Iterable[_Union[Model, _Mapping]]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ErrorDetail(_message.Message):
    __slots__ = ("message", "type", "param", "code", "code_int", "nulls", "extra", "empty")
    MESSAGE_FIELD_NUMBER: _ClassVar[int]
    TYPE_FIELD_NUMBER: _ClassVar[int]
    PARAM_FIELD_NUMBER: _ClassVar[int]
    CODE_FIELD_NUMBER: _ClassVar[int]
    CODE_INT_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    message: str
    type: str
    param: str
    code: str
    code_int: int
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, message: _Optional[str] = ..., type: _Optional[str] = ..., param: _Optional[str] = ..., code: _Optional[str] = ..., code_int: _Optional[int] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class ErrorResponse(_message.Message):
    __slots__ = ("error", "nulls", "extra", "empty")
    ERROR_FIELD_NUMBER: _ClassVar[int]
    NULLS_FIELD_NUMBER: _ClassVar[int]
    EXTRA_FIELD_NUMBER: _ClassVar[int]
    EMPTY_FIELD_NUMBER: _ClassVar[int]
    error: ErrorDetail
    nulls: _containers.RepeatedScalarFieldContainer[int]
    extra: bytes
    empty: _containers.RepeatedScalarFieldContainer[int]
    def __init__(self, error: _Optional[_Union[ErrorDetail, _Mapping]] = ..., nulls: _Optional[_Iterable[int]] = ..., extra: _Optional[bytes] = ..., empty: _Optional[_Iterable[int]] = ...) -> None: ...

class Done(_message.Message):
    __slots__ = ()
    def __init__(self) -> None: ...

class TokenDelta(_message.Message):
    __slots__ = ("content",)
    CONTENT_FIELD_NUMBER: _ClassVar[int]
    content: str
    def __init__(self, content: _Optional[str] = ...) -> None: ...

class Body(_message.Message):
    __slots__ = ("chat_request", "completion_request", "embedding_request", "chat_completion", "completion", "embeddings", "models", "model", "error", "done", "json", "token", "dropped")
    CHAT_REQUEST_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_REQUEST_FIELD_NUMBER: _ClassVar[int]
    EMBEDDING_REQUEST_FIELD_NUMBER: _ClassVar[int]
    CHAT_COMPLETION_FIELD_NUMBER: _ClassVar[int]
    COMPLETION_FIELD_NUMBER: _ClassVar[int]
    EMBEDDINGS_FIELD_NUMBER: _ClassVar[int]
    MODELS_FIELD_NUMBER: _ClassVar[int]
    MODEL_FIELD_NUMBER: _ClassVar[int]
    ERROR_FIELD_NUMBER: _ClassVar[int]
    DONE_FIELD_NUMBER: _ClassVar[int]
    JSON_FIELD_NUMBER: _ClassVar[int]
    TOKEN_FIELD_NUMBER: _ClassVar[int]
    DROPPED_FIELD_NUMBER: _ClassVar[int]
    chat_request: ChatCompletionRequest
    completion_request: CompletionRequest
    embedding_request: EmbeddingRequest
    chat_completion: ChatCompletion
    completion: Completion
    embeddings: EmbeddingResponse
    models: ModelList
    model: Model
    error: ErrorResponse
    done: Done
    json: bytes
    token: TokenDelta
    dropped: _containers.RepeatedScalarFieldContainer[str]
    def __init__(self, chat_request: _Optional[_Union[ChatCompletionRequest, _Mapping]] = ..., completion_request: _Optional[_Union[CompletionRequest, _Mapping]] = ..., embedding_request: _Optional[_Union[EmbeddingRequest, _Mapping]] = ..., chat_completion: _Optional[_Union[ChatCompletion, _Mapping]] = ..., completion: _Optional[_Union[Completion, _Mapping]] = ..., embeddings: _Optional[_Union[EmbeddingResponse, _Mapping]] = ..., models: _Optional[_Union[ModelList, _Mapping]] = ..., model: _Optional[_Union[Model, _Mapping]] = ..., error: _Optional[_Union[ErrorResponse, _Mapping]] = ..., done: _Optional[_Union[Done, _Mapping]] = ..., json: _Optional[bytes] = ..., token: _Optional[_Union[TokenDelta, _Mapping]] = ..., dropped: _Optional[_Iterable[str]] = ...) -> None: ...
