"""What a running service is made of: the stream consumer, the process runner, health
beats and probes, logging, and outbound HTTP behind the network guard."""
