# Worker image: `docker build -t stream-dedup .` then `docker run stream-dedup worker --broker kafka://HOST:9092`
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY stream ./stream
COPY topology ./topology
# Every dependency has a wheel for this platform (tests/service/test_deployment_files.py,
# test_the_image_installs_without_a_compiler, checks it): the slim image has no compiler.
RUN pip install . && useradd --create-home dedup && mkdir -p /var/lib/dedup && chown dedup /var/lib/dedup
USER dedup
ENV DEDUP_DATA_DIR=/var/lib/dedup
VOLUME ["/var/lib/dedup"]
ENTRYPOINT ["dedup"]
CMD ["worker"]
