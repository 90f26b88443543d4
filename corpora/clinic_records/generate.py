"""Generate the bundled private knowledge base `clinic_records`: synthetic doctor-patient records.

Every name, date of birth, e-mail, phone number and record number is fake (Faker, seeded); the
clinical content is drawn from fixed templates. Deterministic for a given seed and Faker version
(pinned in requirements.txt), so the committed file can be regenerated and checked:

    .venv/bin/python corpora/clinic_records/generate.py            # rewrites part_records.jsonl
    .venv/bin/python corpora/clinic_records/generate.py --check    # exit 1 if the file differs
"""
from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import date
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "part_records.jsonl"
N_RECORDS = 320
SEED = 20261130

CONDITIONS = [
    ("type 2 diabetes", "increased thirst, frequent urination and fatigue", "HbA1c of 8.1%", "metformin 500 mg twice daily"),
    ("hypertension", "morning headaches", "clinic blood pressure of 152/96 on two visits", "lisinopril 10 mg daily"),
    ("asthma", "wheezing and a night-time cough", "spirometry with a 14% FEV1 improvement after albuterol",
     "an inhaled budesonide-formoterol inhaler"),
    ("hypothyroidism", "tiredness, weight gain and feeling cold", "TSH of 9.8 mIU/L", "levothyroxine 50 mcg daily"),
    ("urinary tract infection", "burning on urination", "a urine dipstick positive for nitrites", "nitrofurantoin 100 mg twice daily for 5 days"),
    ("migraine", "one-sided throbbing headaches with light sensitivity", "a normal neurological exam", "sumatriptan 50 mg at onset"),
    ("gout", "a hot swollen big toe", "serum urate of 9.2 mg/dL", "colchicine now and allopurinol later"),
    ("iron-deficiency anemia", "breathlessness on stairs", "ferritin of 8 ng/mL", "ferrous sulfate every other day"),
    ("atrial fibrillation", "palpitations", "an ECG showing an irregularly irregular rhythm", "apixaban 5 mg twice daily"),
    ("major depressive disorder", "low mood and poor sleep for two months", "a PHQ-9 score of 17", "sertraline 50 mg daily"),
    ("GERD", "heartburn after meals", "symptoms relieved by a trial of acid suppression", "omeprazole 20 mg before breakfast"),
    ("community-acquired pneumonia", "fever and a productive cough", "a chest X-ray with right lower lobe consolidation",
     "amoxicillin 1 g three times daily"),
    ("osteoarthritis of the knee", "knee pain worse on stairs", "joint-space narrowing on X-ray", "paracetamol and physiotherapy"),
    ("generalized anxiety disorder", "constant worry and muscle tension", "a GAD-7 score of 14", "cognitive behavioural therapy and sertraline"),
    ("chronic kidney disease stage 3", "ankle swelling", "an eGFR of 48 mL/min", "losartan 50 mg daily and a renal diet"),
    ("psoriasis", "scaly plaques on the elbows", "typical plaques on examination", "a topical steroid and calcipotriol"),
]
OPENERS = ["I've been having {symptoms} for a few weeks.", "For about a month I've noticed {symptoms}.",
           "My main problem is {symptoms}, and it's getting worse.", "I came in because of {symptoms}."]
PLANS = ["We'll recheck in {weeks} weeks.", "Please book a follow-up in {weeks} weeks with fresh bloods.",
         "Call the clinic if things get worse; otherwise see me in {weeks} weeks."]


def generate(seed: int = SEED, n: int = N_RECORDS) -> list[dict]:
    from faker import Faker

    fk = Faker("en_US")
    fk.seed_instance(seed)
    rng = random.Random(seed)
    records = []
    for i in range(1, n + 1):
        first, last = fk.first_name(), fk.last_name()
        name = f"{first} {last}"
        dob = fk.date_between(date(1935, 1, 1), date(2006, 12, 31)).isoformat()  # fixed ranges: no "today"
        email = f"{first.lower()}.{last.lower()}{rng.randint(1, 99)}@{fk.free_email_domain()}"
        phone = fk.numerify("(###) ###-####")
        visit = fk.date_between(date(2024, 1, 1), date(2025, 12, 31)).isoformat()
        mrn = fk.numerify("MRN-#######")
        doctor = f"Dr. {fk.last_name()}"
        cond, symptoms, finding, med = CONDITIONS[rng.randrange(len(CONDITIONS))]
        text = (f"Record {mrn}. Visit on {visit} with {doctor}. Patient: {name}, born {dob}, phone {phone}, "
                f"email {email}.\n"
                f"Patient: {rng.choice(OPENERS).format(symptoms=symptoms)}\n"
                f"Doctor: Thank you, {first}. The tests show {finding}, which fits {cond}.\n"
                f"Patient: What do we do about it?\n"
                f"Doctor: I'm starting {med}. {rng.choice(PLANS).format(weeks=rng.choice([2, 4, 6, 8, 12]))}")
        records.append({"id": f"rec-{i:04d}", "text": text, "name": name, "dob": dob, "email": email,
                        "phone": phone, "mrn": mrn, "visit_date": visit, "doctor": doctor, "diagnosis": cond,
                        "medication": med})
    return records


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    args = ap.parse_args()
    content = render(generate())
    if args.check:
        same = OUT.is_file() and OUT.read_text(encoding="utf-8") == content
        print("up to date" if same else "differs from the generator output")
        return 0 if same else 1
    OUT.write_text(content, encoding="utf-8")
    print(f"wrote {OUT} ({content.count(chr(10))} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
