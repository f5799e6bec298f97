"""Ray at the edge: actor hosts around the plain classes, typed clients that hide .remote()/ray.get."""
