"""A CustomObjectsApi whose reads answer from a script, for tests of code that follows a
custom resource (a TFJob, a TrainJob, an InferenceService) through API hiccups."""

import copy

from kubernetes.client.exceptions import ApiException


def unavailable():
    """The error an API server gives while it restarts or is overloaded."""
    return ApiException(status=503, reason="Service Unavailable")


class ScriptedObjects:
    """Nothing exists at first (a read answers 404); once created, each read answers the
    next item of the script: raised if it is an exception, else the object's status."""

    def __init__(self, script):
        self.script, self.reads, self.created, self.deleted = list(script), 0, [], []

    @property
    def body(self):
        """The object as created, with the fields the API server adds."""
        return self.created[-1] if self.created else None

    def create_namespaced_custom_object(self, group, version, namespace, plural, body):
        body = copy.deepcopy(body)
        body.setdefault("metadata", {}).update(generation=1, resourceVersion="1")
        self.created.append(body)
        return body

    def get_namespaced_custom_object(self, group, version, namespace, plural, name):
        if self.body is None:
            raise ApiException(status=404, reason="Not Found")
        self.reads += 1
        item = self.script.pop(0)
        if isinstance(item, BaseException):
            raise item
        return {**self.body, "status": item}

    def delete_namespaced_custom_object(self, group, version, namespace, plural, name,
                                        propagation_policy=None):
        self.deleted.append(name)
