"""parity.metrics"""
