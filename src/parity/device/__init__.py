"""parity.device"""
