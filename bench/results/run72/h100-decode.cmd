build-dev/tools/moeroute bench --backend cuda --format csv
