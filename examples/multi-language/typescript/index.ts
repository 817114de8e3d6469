// The GPU operator's operands on the cluster the `kubeconfig` secret points at, from one config document.
import * as pulumi from "@pulumi/pulumi";
import * as gpu from "@pulumi/gpu-operator";

const settings = new pulumi.Config();

const operator = new gpu.GpuOperator("gpu", {
    kubeconfig: settings.requireSecret("kubeconfig"),
    // the config document, as in a stack file
    config: {
        nfd: { enabled: false }, // the cluster runs Node Feature Discovery already
        operator: { mig: { strategy: "single" } },
    },
});

export const namespace = operator.namespace;
export const gpuResourceNames = operator.gpuResourceNames;
export const nodeSelectorLabels = operator.nodeSelectorLabels;
export const runtimeClassName = operator.runtimeClassName;
export const daemonsetNames = operator.daemonsetNames;
