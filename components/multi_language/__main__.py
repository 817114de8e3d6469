"""The `gpu-operator` plugin's entry point: the Python language host runs `python <plugin folder> <engine>`."""

from gpu_operator.components.multi_language.provider import serve

if __name__ == "__main__":
    serve()
