"""A chat completion, exactly as with the official client (only the import differs).

    OPENAI_BASE_URL=http://127.0.0.1:8000/v1 OPENAI_API_KEY=sk-... python examples/basic_chat.py
"""

import os

from llmclient import OpenAI

client = OpenAI()  # reads OPENAI_API_KEY and OPENAI_BASE_URL
model = os.environ.get("MODEL") or client.models.list().data[0].id

completion = client.chat.completions.create(
    model=model,
    messages=[
        {"role": "system", "content": "You are a helpful assistant."},
        {"role": "user", "content": "Write one sentence about the sea."},
    ],
    max_tokens=32,
)
print(completion.choices[0].message.content)
print(f"tokens: {completion.usage.prompt_tokens} in, {completion.usage.completion_tokens} out")
