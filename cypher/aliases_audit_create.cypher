// One audit entry; details are JSON. `name` is the Browser caption.
CREATE (:AuditEntry {seq: $seq, at: $at, who: $who, action: $action, target: $target,
                     details: $details, name: $action})
