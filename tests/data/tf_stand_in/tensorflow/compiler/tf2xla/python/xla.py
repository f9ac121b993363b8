from tensorflow import _CONFIG


def call_module_maximum_supported_version():
  return _CONFIG["calling_convention"][1]
