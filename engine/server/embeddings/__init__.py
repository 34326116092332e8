"""OpenAI `/v1/embeddings` over the embedding model served beside the chat model."""
