"""Adapters: the only modules that import boto3. They translate vendor errors into
``hub.errors`` types so that use cases decide on types, never on message text."""
