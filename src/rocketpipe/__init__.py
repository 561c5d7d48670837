"""rocketpipe: Apache RocketMQ's messaging system in pure Python."""
