"""The inbox: notices a person drops beside a running conversation, delivered to its model once each."""
