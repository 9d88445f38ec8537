build-dev/tools/moeroute bench --backend cuda --format csv --models deepseek-r1-softmax,gpt-oss-120b
