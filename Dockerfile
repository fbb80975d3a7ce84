# Worker image: `docker build -t stream-dedup .` then `docker run stream-dedup worker --broker kafka://HOST:9092`
FROM python:3.11-slim

ENV PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1 PIP_NO_CACHE_DIR=1
WORKDIR /app
COPY pyproject.toml README.md ./
COPY stream ./stream
COPY topology ./topology
# [fast] adds rjieba: same tokens as jieba (same fingerprint schema), ~20x faster segmentation
RUN pip install ".[fast]" && useradd --create-home dedup && mkdir -p /var/lib/dedup && chown dedup /var/lib/dedup
USER dedup
ENV DEDUP_DATA_DIR=/var/lib/dedup
VOLUME ["/var/lib/dedup"]
ENTRYPOINT ["dedup"]
CMD ["worker"]
