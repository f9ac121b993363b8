from tensorflow import _CONFIG


def get_current_version():
  return _CONFIG["stablehlo"]
