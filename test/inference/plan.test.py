# Prints the best configuration of `ridge plan --inference --format json`.
import json, sys
doc = json.load(open(sys.argv[1]))
assert doc["options"]["mode"] == "inference"
e = doc["ranked"][0]
print("tp=%d pp=%d replicas=%d all_reduces=%d kv=%d weights=%d" % (
    e["tp"], e["pp"], e["replicas"], e["all_reduces_per_pass"], e["memory"]["kv_cache"],
    e["memory"]["weights"]))
