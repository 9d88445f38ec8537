build-dev/tools/moeroute bench --backend cuda --format csv --models gpt-oss-120b,gpt-oss-20b,qwen1.5-moe,dbrx,deepseek-r1-softmax
