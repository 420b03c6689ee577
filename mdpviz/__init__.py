"""mdpviz: build, solve and evaluate metric differential privacy (mDP) mechanisms on city road networks."""

from .cities import download_city, list_cities, load_city
from .errors import MdpvizError
from .problem import Problem, build_problem, problem_from_points

__version__ = "0.1.0"
__all__ = ["MdpvizError", "Problem", "build_problem", "download_city", "list_cities", "load_city",
           "problem_from_points", "__version__"]
