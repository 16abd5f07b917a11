# rdmak-bench: the default image of `rdmak bench k8s`: rdmak on Debian slim with perftest,
# the verbs providers and infiniband-diags, so one pod can test, diagnose and look around
# (rdmak bench, rdmak doctor --pod, ibstat, ibv_devinfo).
#   docker build -f deploy/Dockerfile -t rdmak:0.1.0 .
#   docker build -f deploy/bench.Dockerfile -t rdmak-bench:0.1.0 .
# Offline clusters (seed 002): tag and push it to the cluster's registry and give that registry
# to `rdmak bench k8s --registry REGISTRY`; the pods then pull REGISTRY/rdmak-bench:0.1.0.
# Debian's perftest is built without CUDA: for --gpu use an image with a CUDA build of perftest
# (--image), e.g. the one seed 002 used, and keep rdmak in it.
ARG RDMAK_IMAGE=rdmak:0.1.0
FROM ${RDMAK_IMAGE}
RUN apt-get update -qq && apt-get install -y -qq --no-install-recommends \
        perftest ibverbs-providers ibverbs-utils infiniband-diags rdmacm-utils \
    && rm -rf /var/lib/apt/lists/*
RUN ln -s rdmak /usr/local/bin/rdmak-bench
# The pods of `rdmak bench k8s` run `sleep infinity` and get the test through kubectl exec.
ENTRYPOINT ["rdmak", "bench"]
CMD ["--help"]
