"""Every test sees 8 simulated CPU devices; TensorFlow stays quiet."""
import os

# Must happen before jax is imported anywhere in the test session.
os.environ["XLA_FLAGS"] = (os.environ.get("XLA_FLAGS", "")
                           + " --xla_force_host_platform_device_count=8")
os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "2")
os.environ.setdefault("CUDA_VISIBLE_DEVICES", "")
