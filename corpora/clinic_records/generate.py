"""Generate the bundled private knowledge base `clinic_records`: synthetic doctor-patient records.

Every name, date of birth, address, e-mail, phone number and record number is fake (Faker,
seeded). The clinical content is assembled from a table of ~30 conditions (symptoms, findings,
tests with randomised values, treatments, advice) and rendered in one of seven record formats
(visit dialog, SOAP note, referral letter, telephone note, discharge summary, portal message,
narrative progress note), with many phrasings per sentence, a variable sentence order and
optional details, so that two records share little wording beyond ordinary English.

Deterministic for a given seed and Faker version (pinned in requirements.txt), so the committed
file can be regenerated and checked:

    .venv/bin/python corpora/clinic_records/generate.py            # rewrites part_records.jsonl
    .venv/bin/python corpora/clinic_records/generate.py --check    # exit 1 if the file differs
    .venv/bin/python corpora/clinic_records/generate.py --held-out 280   # rewrites ../clinic_records_heldout/

``--held-out N`` continues the same seeded sequence past the 320 records (records 321 … 320 + N: the same
clinic, formats and fake-person generator, never in the knowledge base) into the bundled corpus
``clinic_records_heldout``: the non-members of membership experiments larger than the 320 records allow.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from datetime import date, timedelta
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "part_records.jsonl"
N_RECORDS = 320
SEED = 20261130
MIN_WORDS, MAX_WORDS = 80, 200


def U(lo: float, hi: float, dec: int = 0):
    """A random number in [lo, hi] with `dec` decimals, as text (drawn when the record is built)."""
    return lambda r: f"{r.uniform(lo, hi):.{dec}f}"


# --------------------------------------------------------------------------- clinical content
# Each condition: diagnosis, age range, symptoms, triggers/pattern, exam findings, test results
# (format strings whose {} slots take the U() draws), medication options, advice, red flags,
# follow-up weeks, and vitals overrides (bp, temp, hr, spo2).
C = [
    dict(
        dx="type 2 diabetes",
        age=(35, 85),
        sx=[
            "increased thirst",
            "passing urine often, including at night",
            "tiredness in the afternoons",
            "blurred vision at times",
            "slow-healing cuts on the feet",
            "a few kilos of unplanned weight loss",
        ],
        trig=["worse after sugary drinks", "mostly since starting a desk job"],
        exam=[
            "reduced monofilament sensation at both big toes",
            "no retinopathy seen on fundoscopy",
            "acanthosis nigricans at the neck",
        ],
        tests=[
            ("HbA1c {}%", U(7.2, 9.8, 1)),
            ("fasting glucose {} mg/dL", U(138, 215)),
            ("urine albumin-creatinine ratio {} mg/g", U(12, 45)),
        ],
        meds=[
            "metformin 500 mg twice daily with meals",
            "metformin extended-release 1000 mg with the evening meal",
            "metformin 500 mg twice daily plus empagliflozin 10 mg daily",
        ],
        adv=[
            "cut down on sugary drinks and refined carbohydrates",
            "aim for 150 minutes of brisk walking a week",
            "attend the diabetes education course",
            "have a yearly eye screening",
        ],
        red=["vomiting with abdominal pain", "a foot wound that turns red or smells"],
        fu=(6, 12),
    ),
    dict(
        dx="essential hypertension",
        age=(35, 85),
        sx=[
            "occasional morning headaches",
            "high readings at the pharmacy",
            "a feeling of pressure behind the eyes",
            "nosebleeds twice this month",
        ],
        trig=["readings higher on work days", "lots of salty takeaway food in the diet"],
        exam=["no carotid bruits", "normal heart sounds without murmur", "no ankle oedema"],
        tests=[
            ("home average of {}/{} mmHg", U(142, 164), U(90, 102)),
            ("creatinine {} mg/dL", U(0.7, 1.1, 2)),
            ("ECG with no left ventricular hypertrophy", None),
        ],
        meds=["amlodipine 5 mg once daily", "lisinopril 10 mg once daily", "losartan 50 mg once daily"],
        adv=["keep salt under 6 g a day", "limit alcohol to a few drinks a week", "keep a home blood pressure diary"],
        red=["crushing chest pain", "sudden weakness of an arm or face"],
        fu=(4, 8),
        bp=(148, 172, 92, 104),
    ),
    dict(
        dx="asthma",
        age=(18, 70),
        sx=[
            "wheezing",
            "a dry cough that wakes them at night",
            "chest tightness when running",
            "shortness of breath on cold mornings",
        ],
        trig=["worse around cats", "flares after colds", "triggered by cold air and exercise"],
        exam=["scattered expiratory wheeze", "a clear chest between episodes", "no use of accessory muscles"],
        tests=[
            ("peak flow of {} L/min, about {}% of predicted", U(310, 420), U(68, 82)),
            ("FEV1 improving by {}% after albuterol", U(13, 22)),
        ],
        meds=[
            "budesonide-formoterol 200/6 one puff twice daily and as needed",
            "fluticasone 100 mcg two puffs twice daily with albuterol as needed",
        ],
        adv=[
            "use a spacer with the inhaler",
            "rinse the mouth after the steroid inhaler",
            "follow the written asthma action plan",
        ],
        red=["being too breathless to speak in sentences", "the reliever lasting less than four hours"],
        fu=(4, 8),
    ),
    dict(
        dx="hypothyroidism",
        age=(25, 85),
        sx=[
            "constant tiredness",
            "gaining weight without eating more",
            "always feeling cold",
            "dry skin and brittle hair",
            "constipation",
            "low mood",
        ],
        trig=["a sister has thyroid disease", "symptoms crept up over the winter"],
        exam=["a slightly enlarged, non-tender thyroid", "slow relaxing ankle reflexes", "dry skin"],
        tests=[
            ("TSH {} mIU/L", U(7.5, 16.0, 1)),
            ("free T4 {} ng/dL", U(0.5, 0.8, 2)),
            ("positive anti-TPO antibodies", None),
        ],
        meds=["levothyroxine 50 mcg every morning on an empty stomach", "levothyroxine 75 mcg daily before breakfast"],
        adv=["take the tablet 30 minutes before food or coffee", "keep iron and calcium four hours apart from it"],
        red=["chest pain or a racing heart after starting the tablets"],
        fu=(6, 8),
    ),
    dict(
        dx="acute uncomplicated cystitis",
        acute=True,
        age=(18, 60),
        sx=[
            "burning when passing urine",
            "needing to go every half hour",
            "lower tummy ache",
            "cloudy, strong-smelling urine",
        ],
        trig=["onset two days after a long flight", "one similar episode last year"],
        exam=["mild suprapubic tenderness", "no flank tenderness", "no fever"],
        tests=[("urine dipstick positive for nitrites and leukocytes", None), ("temperature {} C", U(36.6, 37.3, 1))],
        meds=[
            "nitrofurantoin 100 mg twice daily for 5 days",
            "fosfomycin 3 g as a single dose",
            "trimethoprim-sulfamethoxazole 160/800 mg twice daily for 3 days",
        ],
        adv=["drink plenty of water", "take paracetamol for discomfort"],
        red=["fever with loin pain", "vomiting and being unable to keep tablets down"],
        fu=(1, 2),
    ),
    dict(
        dx="migraine without aura",
        age=(18, 60),
        sx=[
            "one-sided throbbing headaches",
            "sensitivity to light and noise",
            "nausea during attacks",
            "needing to lie down in a dark room",
        ],
        trig=["attacks linked to poor sleep", "often after skipping meals", "red wine seems to trigger them"],
        exam=["a normal neurological examination", "normal fundi", "no neck stiffness"],
        tests=[("about {} headache days a month in the diary", U(3, 9)), ("blood pressure normal", None)],
        meds=[
            "sumatriptan 50 mg at the onset of an attack",
            "naproxen 500 mg at onset with metoclopramide 10 mg",
            "propranolol 40 mg twice daily for prevention",
        ],
        adv=[
            "keep a headache diary",
            "avoid painkillers on more than ten days a month",
            "keep regular meals and sleep",
        ],
        red=["a sudden thunderclap headache", "headache with fever and a stiff neck"],
        fu=(6, 10),
    ),
    dict(
        dx="acute gout",
        acute=True,
        age=(35, 85),
        sx=[
            "a hot, swollen big toe joint",
            "pain so bad the bedsheet hurts",
            "redness over the ankle",
            "limping since the night before",
        ],
        trig=["onset after a weekend of beer and red meat", "onset a few days after starting a water tablet"],
        exam=["a red, exquisitely tender first MTP joint", "warmth and swelling of the joint", "no tophi"],
        tests=[("serum urate {} mg/dL", U(7.8, 10.6, 1)), ("CRP {} mg/L", U(18, 64))],
        meds=[
            "colchicine 1.2 mg then 0.6 mg one hour later",
            "naproxen 500 mg twice daily with food for 5 days",
            "prednisone 30 mg daily for 5 days",
        ],
        adv=[
            "rest and elevate the foot",
            "cut back on beer, sugary drinks and organ meats",
            "discuss allopurinol once the flare settles",
        ],
        red=["fever with a hot joint", "several joints flaring at once"],
        fu=(2, 6),
    ),
    dict(
        dx="iron-deficiency anemia",
        age=(18, 80),
        sx=["breathlessness on the stairs", "looking pale", "feeling washed out", "craving ice", "cold hands and feet"],
        trig=["very little red meat in the diet", "noticed it over several months"],
        exam=["pale conjunctivae", "a soft flow murmur", "brittle nails"],
        tests=[("haemoglobin {} g/dL", U(8.6, 10.9, 1)), ("ferritin {} ng/mL", U(4, 13)), ("MCV {} fL", U(68, 77))],
        meds=["ferrous sulfate 325 mg every other day", "ferrous fumarate 210 mg once daily with orange juice"],
        adv=["take iron away from tea and coffee", "expect dark stools on iron"],
        red=["black tarry stools", "fainting"],
        fu=(4, 8),
    ),
    dict(
        dx="atrial fibrillation",
        age=(55, 90),
        sx=["palpitations", "a fluttering in the chest", "getting breathless on exertion", "feeling light-headed"],
        trig=["episodes after alcohol", "first noticed during a cold"],
        exam=["an irregularly irregular pulse", "no signs of heart failure"],
        tests=[
            ("ECG showing atrial fibrillation at {} bpm", U(104, 132)),
            ("CHA2DS2-VASc score of {}", U(2, 4)),
            ("normal TSH", None),
        ],
        meds=[
            "apixaban 5 mg twice daily and metoprolol succinate 25 mg daily",
            "apixaban 5 mg twice daily plus bisoprolol 2.5 mg daily",
        ],
        adv=["cut down on alcohol", "report any unusual bleeding"],
        red=["chest pain or fainting", "facial droop or slurred speech"],
        fu=(2, 6),
        hr=(104, 132),
    ),
    dict(
        dx="major depressive disorder",
        age=(18, 80),
        sx=[
            "low mood most days",
            "poor sleep with early waking",
            "loss of interest in hobbies",
            "poor concentration at work",
            "low appetite",
        ],
        trig=["onset after a redundancy", "since a bereavement in the spring"],
        exam=["flat affect", "no psychotic features", "denies current suicidal intent"],
        tests=[("PHQ-9 score of {}", U(15, 22)), ("normal thyroid function", None)],
        meds=["sertraline 50 mg once daily", "escitalopram 10 mg once daily", "mirtazapine 15 mg at night"],
        adv=[
            "refer for talking therapy",
            "keep some daily structure and exercise",
            "expect the tablets to take a few weeks to work",
        ],
        red=["thoughts of self-harm", "feeling unable to keep safe"],
        fu=(2, 4),
    ),
    dict(
        dx="gastro-oesophageal reflux disease",
        age=(25, 80),
        sx=["heartburn after meals", "a sour taste in the mouth at night", "burping", "a hoarse voice in the mornings"],
        trig=["worse lying flat", "worse after coffee and late dinners"],
        exam=["mild epigastric tenderness", "no masses"],
        tests=[("BMI {}", U(27, 33, 1)), ("haemoglobin normal", None)],
        meds=["omeprazole 20 mg once daily before breakfast", "pantoprazole 40 mg daily half an hour before food"],
        adv=["raise the head of the bed", "avoid eating within three hours of bedtime", "cut down on coffee"],
        red=["difficulty swallowing", "vomiting blood or black stools"],
        fu=(4, 8),
    ),
    dict(
        dx="community-acquired pneumonia",
        acute=True,
        age=(18, 85),
        sx=[
            "fever and sweats",
            "a cough bringing up green phlegm",
            "pain on the right side when breathing in",
            "breathlessness",
        ],
        trig=["following a flu-like illness", "onset after a family gathering"],
        exam=["crackles at the right base", "bronchial breathing on the right", "dullness to percussion"],
        tests=[
            ("chest X-ray with right lower lobe consolidation", None),
            ("CRP {} mg/L", U(85, 180)),
            ("CURB-65 score of {}", U(0, 1)),
        ],
        meds=["amoxicillin 1 g three times daily for 5 days", "doxycycline 100 mg twice daily for 5 days"],
        adv=["drink plenty of fluids", "take paracetamol for fever"],
        red=["increasing breathlessness", "confusion or blue lips"],
        fu=(1, 6),
        temp=(38.1, 39.2),
        spo2=(93, 96),
    ),
    dict(
        dx="osteoarthritis of the knee",
        age=(45, 90),
        sx=[
            "knee pain worse on stairs",
            "stiffness for a few minutes in the morning",
            "a grinding feeling",
            "swelling after long walks",
        ],
        trig=["years of football in youth", "worse in cold weather"],
        exam=["crepitus on movement", "a small effusion", "bony enlargement at the medial joint line"],
        tests=[("X-ray showing medial joint-space narrowing", None), ("BMI {}", U(28, 34, 1))],
        meds=[
            "diclofenac 1% gel four times daily",
            "acetaminophen 1 g up to three times daily",
            "ibuprofen 400 mg three times daily with food when needed",
        ],
        adv=["physiotherapy for quadriceps strengthening", "low-impact exercise like swimming or cycling"],
        red=["a hot, red knee with fever"],
        fu=(6, 12),
    ),
    dict(
        dx="generalized anxiety disorder",
        age=(18, 70),
        sx=["constant worry", "muscle tension", "trouble getting to sleep", "feeling on edge", "a racing heart"],
        trig=["worse since a new job", "on and off since university"],
        exam=["appears anxious but well", "normal heart rate and rhythm"],
        tests=[("GAD-7 score of {}", U(12, 18)), ("normal TSH", None)],
        meds=["escitalopram 10 mg once daily", "sertraline 50 mg once daily"],
        adv=["self-referral for cognitive behavioural therapy", "cut down on caffeine", "try a breathing app"],
        red=["thoughts of self-harm"],
        fu=(3, 6),
    ),
    dict(
        dx="chronic kidney disease stage 3a",
        age=(50, 90),
        sx=["mild ankle swelling", "tiredness", "abnormal kidney tests on routine bloods", "itchy skin"],
        trig=["long history of high blood pressure", "on ibuprofen for years"],
        exam=["mild pitting oedema at the ankles", "no bladder enlargement"],
        tests=[
            ("eGFR {} mL/min", U(45, 58)),
            ("urine ACR {} mg/g", U(35, 120)),
            ("potassium {} mmol/L", U(4.2, 5.0, 1)),
        ],
        meds=["losartan 25 mg once daily", "lisinopril 5 mg once daily"],
        adv=["avoid ibuprofen and other anti-inflammatories", "keep salt intake low"],
        red=["passing very little urine", "marked swelling"],
        fu=(8, 12),
    ),
    dict(
        dx="plaque psoriasis",
        age=(18, 75),
        sx=["scaly plaques on the elbows and knees", "an itchy scalp with flakes", "pitting of the fingernails"],
        trig=["flares with stress", "worse in winter"],
        exam=["well-demarcated silvery plaques", "about {} percent of body surface affected", "nail pitting"],
        tests=[("no joint swelling on review", None)],
        meds=[
            "clobetasol 0.05% ointment once daily plus calcipotriene cream",
            "betamethasone-calcipotriene gel once daily",
        ],
        adv=["use a thick emollient every day", "coal tar shampoo for the scalp"],
        red=["painful swollen joints", "widespread red skin"],
        fu=(4, 8),
    ),
    dict(
        dx="hyperlipidaemia",
        age=(35, 80),
        sx=["a high cholesterol result on a work health check", "fatty deposits around the eyelids"],
        trig=["father had a heart attack at 58", "a diet high in fried food"],
        exam=["xanthelasma", "normal pulses"],
        tests=[
            ("LDL cholesterol {} mg/dL", U(162, 214)),
            ("total cholesterol {} mg/dL", U(238, 290)),
            ("10-year cardiovascular risk of {}%", U(10, 19)),
        ],
        meds=["atorvastatin 20 mg at night", "rosuvastatin 10 mg once daily"],
        adv=["swap to a Mediterranean-style diet", "recheck lipids and liver tests in three months"],
        red=["unexplained muscle pain or dark urine"],
        fu=(12, 12),
    ),
    dict(
        dx="acute bacterial sinusitis",
        acute=True,
        age=(18, 75),
        sx=[
            "facial pain over the cheeks",
            "thick yellow nasal discharge",
            "a blocked nose",
            "pain bending forward",
            "a worsening after initially getting better",
        ],
        trig=["following a cold {} days ago", "a recent dental filling"],
        exam=["tenderness over the maxillary sinuses", "purulent discharge in the nose"],
        tests=[("temperature {} C", U(37.8, 38.6, 1))],
        meds=["amoxicillin-clavulanate 875/125 mg twice daily for 7 days", "doxycycline 100 mg twice daily for 5 days"],
        adv=["saline nasal rinses", "steam inhalation"],
        red=["swelling around the eye", "a severe headache or double vision"],
        fu=(1, 2),
    ),
    dict(
        dx="streptococcal pharyngitis",
        acute=True,
        age=(18, 50),
        sx=["a very sore throat", "painful swallowing", "fever", "swollen glands in the neck"],
        trig=["a child at home had the same", "no cough at all"],
        exam=["swollen tonsils with white exudate", "tender anterior cervical nodes"],
        tests=[("rapid strep test positive", None), ("Centor score of {}", U(3, 4))],
        meds=["penicillin V 500 mg twice daily for 10 days", "amoxicillin 1000 mg once daily for 10 days"],
        adv=["salt-water gargles", "stay off work until 24 hours on antibiotics"],
        red=["drooling or being unable to swallow", "a muffled voice"],
        fu=(1, 2),
        temp=(38.0, 39.0),
    ),
    dict(
        dx="chronic obstructive pulmonary disease",
        age=(50, 90),
        sx=["breathlessness walking uphill", "a morning cough with white phlegm", "chest infections every winter"],
        trig=["a {}-pack-year smoking history", "years working in a dusty factory"],
        exam=["a barrel chest", "prolonged expiration", "quiet breath sounds"],
        tests=[("FEV1/FVC ratio of 0.{}", U(55, 68)), ("MRC breathlessness grade {}", U(2, 3))],
        meds=["tiotropium 18 mcg inhaled once daily", "umeclidinium-vilanterol one inhalation daily"],
        adv=["stop smoking, with support", "pulmonary rehabilitation", "flu and pneumococcal vaccines"],
        red=["lips turning blue", "being unable to complete sentences"],
        fu=(8, 12),
        spo2=(92, 95),
    ),
    dict(
        dx="allergic rhinitis",
        age=(18, 60),
        sx=["sneezing fits", "a runny nose", "itchy watery eyes", "a blocked nose at night"],
        trig=["every spring when the pollen is high", "worse around dust while cleaning"],
        exam=["pale boggy nasal mucosa", "allergic shiners"],
        tests=[("skin-prick test positive to grass pollen", None)],
        meds=["fluticasone nasal spray two sprays each nostril daily", "cetirizine 10 mg once daily"],
        adv=["start the spray before the season", "keep windows closed on high-pollen days"],
        red=["wheezing or tight chest"],
        fu=(8, 12),
    ),
    dict(
        dx="acute mechanical low back pain",
        acute=True,
        age=(20, 70),
        sx=["low back ache", "stiffness bending", "pain into the buttock", "difficulty getting out of a chair"],
        trig=["after lifting boxes at work", "after gardening on the weekend"],
        exam=["paraspinal muscle spasm", "negative straight-leg raise", "normal leg power and reflexes"],
        tests=[("no red flags on history", None)],
        meds=["ibuprofen 400 mg three times daily with food for 7 days", "naproxen 500 mg twice daily for 5 days"],
        adv=["keep moving rather than bed rest", "heat packs", "physiotherapy if not better in a few weeks"],
        red=["numbness around the bottom", "problems controlling bladder or bowel"],
        fu=(2, 4),
    ),
    dict(
        dx="herpes zoster",
        acute=True,
        age=(45, 90),
        sx=["a burning pain on one side of the chest", "a band of blisters", "tingling before the rash"],
        trig=["a stressful few weeks beforehand", "chickenpox in childhood"],
        exam=["grouped vesicles on a red base in a single dermatome", "no eye involvement"],
        tests=[("rash present for {} days", U(1, 2))],
        meds=["valacyclovir 1 g three times daily for 7 days", "acyclovir 800 mg five times daily for 7 days"],
        adv=["keep the rash covered", "avoid pregnant women and newborns until it crusts"],
        red=["rash near the eye or change in vision"],
        fu=(1, 2),
    ),
    dict(
        dx="cellulitis of the lower leg",
        acute=True,
        age=(30, 85),
        sx=["a red, hot, swollen shin", "spreading redness", "pain when walking", "feeling feverish"],
        trig=["onset after a scratch while gardening", "athlete's foot between the toes"],
        exam=["a warm, tender area of erythema about {} cm across", "no fluctuance"],
        tests=[("CRP {} mg/L", U(30, 90))],
        meds=["cephalexin 500 mg four times daily for 5 days", "dicloxacillin 500 mg four times daily for 7 days"],
        adv=["elevate the leg", "mark the edge of the redness with a pen"],
        red=["redness spreading beyond the line", "fever or rigors"],
        fu=(1, 1),
        temp=(37.6, 38.4),
    ),
    dict(
        dx="benign paroxysmal positional vertigo",
        age=(40, 85),
        sx=[
            "the room spinning when rolling over in bed",
            "dizzy spells lasting under a minute",
            "nausea with the spells",
        ],
        trig=["worst looking up to a high shelf", "onset after a minor head bump"],
        exam=["a positive Dix-Hallpike test on the right", "no nystagmus at rest", "normal cranial nerves"],
        tests=[("normal hearing on whisper test", None)],
        meds=[
            "meclizine 25 mg as needed for a few days",
            "the Epley manoeuvre in clinic, with meclizine 12.5 mg as needed",
        ],
        adv=["Brandt-Daroff exercises at home", "get up slowly"],
        red=["double vision or slurred speech", "new hearing loss"],
        fu=(2, 4),
    ),
    dict(
        dx="vitamin B12 deficiency",
        age=(40, 90),
        sx=["pins and needles in the feet", "tiredness", "a sore red tongue", "memory lapses"],
        trig=["a vegan diet for years", "on metformin for a long time"],
        exam=["glossitis", "reduced vibration sense at the ankles"],
        tests=[("vitamin B12 {} pg/mL", U(110, 185)), ("MCV {} fL", U(101, 110))],
        meds=["cyanocobalamin 1000 mcg injections", "oral cyanocobalamin 1000 mcg daily"],
        adv=["eat fortified foods", "recheck levels in three months"],
        red=["worsening walking or balance"],
        fu=(6, 12),
    ),
    dict(
        dx="irritable bowel syndrome",
        age=(18, 60),
        sx=[
            "cramping tummy pain",
            "bloating by the evening",
            "alternating loose stools and constipation",
            "pain easing after opening the bowels",
        ],
        trig=["worse with stress", "worse after onions and beans"],
        exam=["a soft abdomen with mild lower tenderness", "no masses"],
        tests=[("normal faecal calprotectin", None), ("negative coeliac serology", None)],
        meds=["peppermint oil capsules before meals", "dicyclomine 20 mg up to four times daily"],
        adv=["try a low-FODMAP diet with a dietitian", "regular meals and plenty of water"],
        red=["blood in the stool", "weight loss"],
        fu=(6, 8),
    ),
    dict(
        dx="Helicobacter pylori gastritis",
        age=(25, 80),
        sx=["burning upper tummy pain", "feeling full quickly", "nausea", "pain that eases with food"],
        trig=["worse on an empty stomach", "regular aspirin use"],
        exam=["epigastric tenderness", "no masses"],
        tests=[("positive H. pylori stool antigen", None), ("haemoglobin {} g/dL", U(12.6, 14.8, 1))],
        meds=[
            "omeprazole 20 mg, amoxicillin 1 g and clarithromycin 500 mg, all twice daily for 14 days",
            "bismuth quadruple therapy for 14 days",
        ],
        adv=["finish the whole course", "avoid aspirin and ibuprofen", "retest after treatment"],
        red=["vomiting blood", "black stools"],
        fu=(6, 8),
    ),
    dict(
        dx="heart failure with reduced ejection fraction",
        age=(55, 90),
        sx=["swollen ankles", "breathlessness lying flat", "waking up gasping at night", "weight gain of a few kilos"],
        trig=["a heart attack some years ago", "worse after salty meals"],
        exam=["bibasal crackles", "raised jugular venous pressure", "pitting oedema to mid-shin"],
        tests=[("NT-proBNP {} pg/mL", U(1400, 4200)), ("ejection fraction of {}% on echo", U(28, 38))],
        meds=["furosemide 40 mg each morning", "furosemide 40 mg daily and ramipril 2.5 mg daily"],
        adv=["weigh yourself every morning", "limit fluids to about 1.5 litres"],
        red=["weight up more than 2 kg in three days", "breathlessness at rest"],
        fu=(1, 2),
    ),
    dict(
        dx="osteoporosis",
        age=(55, 90),
        sx=["a wrist fracture after a simple fall", "losing height", "upper back pain"],
        trig=["a low body weight", "long courses of steroids"],
        exam=["thoracic kyphosis", "no spinal tenderness"],
        tests=[("DEXA T-score of -{} at the hip", U(2.6, 3.4, 1)), ("vitamin D {} ng/mL", U(18, 29))],
        meds=["alendronate 70 mg once weekly", "alendronate 70 mg weekly with calcium and vitamin D"],
        adv=["take it upright with a full glass of water", "weight-bearing exercise", "remove trip hazards at home"],
        red=["new thigh or groin pain"],
        fu=(12, 12),
    ),
    dict(
        dx="atopic eczema",
        age=(18, 60),
        sx=["itchy dry patches in the elbow creases", "scratching at night", "cracked skin on the hands"],
        trig=["worse with washing-up liquid", "flares in winter"],
        exam=["lichenified patches in the flexures", "excoriations"],
        tests=[("no sign of infection", None)],
        meds=["triamcinolone 0.1% cream twice daily for 2 weeks", "hydrocortisone 1% cream twice daily"],
        adv=["apply a greasy emollient often", "use soap substitutes"],
        red=["weeping, crusted or painful skin"],
        fu=(3, 6),
    ),
    dict(
        dx="rheumatoid arthritis",
        age=(30, 80),
        sx=[
            "painful swollen finger joints",
            "morning stiffness lasting over an hour",
            "fatigue",
            "trouble opening jars",
        ],
        trig=["symmetrical on both hands", "mother had arthritis"],
        exam=["synovitis of the MCP joints", "tender wrists"],
        tests=[("positive anti-CCP antibodies", None), ("CRP {} mg/L", U(15, 40)), ("ESR {} mm/h", U(32, 60))],
        meds=[
            "methotrexate 15 mg once weekly with folic acid 5 mg weekly",
            "methotrexate 10 mg weekly plus a short prednisone taper",
        ],
        adv=["avoid alcohol on methotrexate", "blood tests every few weeks at first"],
        red=["fever, sore throat or mouth ulcers on methotrexate"],
        fu=(4, 6),
    ),
    dict(
        dx="ureteric stone",
        acute=True,
        age=(25, 70),
        sx=["severe colicky loin pain", "pain moving to the groin", "blood in the urine", "vomiting with the pain"],
        trig=["low fluid intake in the heat", "a previous stone"],
        exam=["tender right loin", "restless with pain"],
        tests=[("CT showing a {} mm stone in the distal ureter", U(4, 6)), ("urine dipstick positive for blood", None)],
        meds=[
            "tamsulosin 0.4 mg daily and ibuprofen 400 mg as needed",
            "ketorolac for pain and tamsulosin 0.4 mg daily",
        ],
        adv=["drink at least 2.5 litres a day", "strain the urine to catch the stone"],
        red=["fever with the pain", "pain not controlled"],
        fu=(2, 4),
    ),
    dict(
        dx="acne vulgaris",
        age=(18, 35),
        sx=["spots on the face and back", "painful nodules on the jaw", "scarring starting"],
        trig=["worse with stress", "worse with heavy make-up"],
        exam=["comedones and inflamed papules", "a few nodules"],
        tests=[("no need for blood tests", None)],
        meds=[
            "adapalene 0.1% gel with benzoyl peroxide 2.5% at night",
            "doxycycline 100 mg daily with topical adapalene",
        ],
        adv=["use non-comedogenic products", "expect improvement over eight weeks"],
        red=["low mood about the skin"],
        fu=(8, 12),
    ),
]

# --------------------------------------------------------------------------- generic pools
ALLERGIES = [
    "no known drug allergies",
    "NKDA",
    "penicillin (rash)",
    "sulfa drugs (hives)",
    "codeine (vomiting)",
    "latex",
    "no known allergies",
    "shellfish",
    "aspirin (wheeze)",
    "none known",
    "erythromycin (stomach upset)",
]
PMH = [
    "appendectomy as a teenager",
    "childhood asthma",
    "a broken wrist years ago",
    "gallbladder removed",
    "no major illnesses",
    "tonsillectomy",
    "a hernia repair",
    "mild eczema",
    "previous kidney stone",
    "hay fever",
    "knee arthroscopy",
    "shingles in the past",
    "nothing significant",
]
FAMILY = [
    "mother with type 2 diabetes",
    "father had a stroke at 70",
    "no relevant family history",
    "brother with high blood pressure",
    "grandmother had breast cancer",
    "family history of heart disease",
    "sister with thyroid disease",
    "parents both alive and well",
]
SMOKE = [
    "never smoked",
    "ex-smoker, quit {} years ago",
    "smokes about {} cigarettes a day",
    "vapes occasionally",
    "non-smoker",
]
ALCOHOL = [
    "drinks {} units a week",
    "drinks socially at weekends",
    "teetotal",
    "a glass of wine most evenings",
    "rarely drinks",
]
LIVING = [
    "lives with a partner",
    "lives alone",
    "lives with two teenage children",
    "lives with an elderly parent",
    "shares a flat with friends",
    "lives with spouse and a dog",
]
DURATION = ["for about {} weeks", "over the last {} months", "since around {} weeks ago", "on and off for {} months"]
ONSET = [
    "It came on gradually.",
    "The onset was sudden.",
    "Symptoms built up slowly.",
    "It started quite abruptly.",
    "Things crept up bit by bit.",
    "",
]
ACUTE_DURATION = [
    "since {day}",
    "since {day} evening",
    "over the last {} days",
    "since {day} morning",
    "for {} days now",
]
DAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday", "the weekend"]
OTC = [
    "ibuprofen",
    "paracetamol",
    "antacids",
    "a heat pack",
    "rest",
    "honey and lemon",
    "herbal tea",
    "a friend's tablets",
    "an online remedy",
    "cold compresses",
    "extra sleep",
    "a pharmacy cream",
    "cutting out caffeine",
    "aspirin",
]
IMPACT = [
    ("has missed {} days of work", "I've missed {} days of work"),
    ("sleep is disturbed", "I'm not sleeping well"),
    ("still managing the school run", "I can still do the school run, just about"),
    ("had to cancel a planned holiday", "I had to cancel a holiday"),
    ("struggling with the stairs at home", "stairs are hard"),
    ("stopped going to the gym", "I've stopped the gym"),
    ("appetite is normal", "I'm eating fine"),
    ("no weight change", "my weight hasn't changed"),
    ("falling behind at work", "work is suffering"),
]
CONCERN = [
    ("worried it might be something serious", "I was worried it's something serious"),
    ("mainly wants reassurance", "I mostly want to know it's nothing bad"),
    ("concerned about side effects of tablets", "I don't like taking tablets, to be honest"),
    ("a colleague had something similar", "someone at work had the same thing"),
    ("prompted to attend by family", "my family made me come in"),
]
REGULAR = [
    "a daily multivitamin",
    "vitamin D 1000 units",
    "no regular medication",
    "the combined pill",
    "cetirizine in summer",
    "occasional antacids",
    "fish oil capsules",
    "no prescribed medicines",
    "melatonin on and off",
]
RELATION = ["wife", "husband", "daughter", "son", "sister", "brother", "partner", "mother", "father", "friend", "niece"]
NUMW = {1: "one", 2: "two", 3: "three", 4: "four", 5: "five", 6: "six", 7: "seven", 8: "eight", 9: "nine", 10: "ten"}


def gen_allergy(r: random.Random, med: str) -> str:
    while True:
        a = r.choice(ALLERGIES)
        if "penicillin" in a and any(x in med for x in ("amoxicillin", "penicillin", "cephalexin", "dicloxacillin")):
            continue
        if "sulfa" in a and "sulfamethoxazole" in med:
            continue
        if "aspirin" in a and any(x in med for x in ("ibuprofen", "naproxen", "ketorolac", "diclofenac")):
            continue
        return a


def cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def plural(n: int, unit: str) -> str:
    return f"{n} {unit}" if n == 1 else f"{n} {unit}s"


class Visit:
    """Everything drawn for one record; the format renderers read it."""

    def __init__(self, r: random.Random, fk, i: int) -> None:
        self.r = r
        self.cond = c = C[r.randrange(len(C))]
        self.sex = r.choice("FM")
        self.first = fk.first_name_female() if self.sex == "F" else fk.first_name_male()
        self.last = fk.last_name()
        self.name = f"{self.first} {self.last}"
        self.he, self.his, self.him = ("she", "her", "her") if self.sex == "F" else ("he", "his", "him")
        self.visit = fk.date_between(date(2024, 1, 1), date(2025, 12, 31))
        age = r.randint(*c["age"])
        born = self.visit - timedelta(days=int(age * 365.25) + r.randint(1, 360))
        self.age = age
        self.dob = born.isoformat()
        user = r.choice(
            [
                f"{self.first.lower()}.{self.last.lower()}{r.randint(1, 99)}",
                f"{self.first[0].lower()}{self.last.lower()}{r.randint(10, 999)}",
                f"{self.last.lower()}.{self.first.lower()}",
                f"{self.first.lower()}{born.year % 100:02d}",
                f"{self.first.lower()}_{self.last[:4].lower()}{r.randint(1, 9)}",
            ]
        )
        self.email = f"{user}@{fk.free_email_domain()}"
        self.phone = fk.numerify(r.choice(["(###) ###-####", "###-###-####", "###.###.####", "+1 ### ### ####"]))
        self.mrn = fk.numerify(r.choice(["MRN-#######", "MRN #######", "MR#########"]))
        self.doctor = f"Dr. {fk.last_name()}"
        self.doc_first = fk.first_name()
        self.address = fk.address().replace("\n", ", ")
        self.job = fk.job().split(",")[0].lower()
        self.clinic = (
            f"{fk.city()} {r.choice(['Family Practice', 'Medical Group', 'Health Centre', 'Primary Care', 'Clinic'])}"
        )
        self.med = r.choice(c["meds"])
        self.allergy = gen_allergy(r, self.med)
        sx = list(c["sx"])
        r.shuffle(sx)
        self.sx = sx[: r.randint(2, min(4, len(sx)))]
        self.trig = self.fill(r.choice(c["trig"]))
        ex = list(c["exam"])
        r.shuffle(ex)
        self.exam = [self.fill(e) for e in ex[: r.randint(1, len(ex))]]
        ts = list(c["tests"])
        r.shuffle(ts)
        self.tests = [
            t.format(*[g(r) for g in gens]) if gens and gens[0] else t for t, *gens in ts[: r.randint(1, len(ts))]
        ]
        adv = list(c["adv"])
        r.shuffle(adv)
        self.adv = adv[: r.randint(1, min(2, len(adv)))]
        self.red = r.choice(c["red"])
        self.weeks = r.randint(*c["fu"])
        n = r.randint(2, 6 if c.get("acute") else 9)
        nt = NUMW[n] if r.random() < 0.5 else n
        self.duration = r.choice(ACUTE_DURATION if c.get("acute") else DURATION).format(nt, day=r.choice(DAYS))
        self.fu_text = plural(self.weeks, "week")
        kin = r.choice(RELATION)
        self.extras = [
            (f"rates it {r.randint(3, 8)}/10", f"I'd put it at {r.randint(3, 8)} out of 10"),
            (f"has tried {r.choice(OTC)} without much relief", f"I tried {r.choice(OTC)} but it didn't help much"),
            tuple(x.format(r.randint(1, 5)) for x in r.choice(IMPACT)),
            r.choice(CONCERN),
            (f"regular medicines: {r.choice(REGULAR)}", f"I only take {r.choice(REGULAR)}"),
            (f"next of kin {fk.name()} ({kin})", f"my {kin} {fk.first_name()} came with me today"),
            (
                f"pharmacy: {fk.last_name()} Pharmacy on {fk.street_name()}",
                f"send it to the {fk.last_name()} pharmacy on {fk.street_name()}",
            ),
            (f"employed at {fk.company()}", f"I work at {fk.company()}"),
        ]
        r.shuffle(self.extras)
        self.onset = r.choice(ONSET)
        self.pmh = r.choice(PMH)
        self.family = r.choice(FAMILY)
        self.smoke = r.choice(SMOKE).format(r.randint(2, 25))
        self.alcohol = r.choice(ALCOHOL).format(r.randint(2, 20))
        self.living = r.choice(LIVING)
        b = c.get("bp", (112, 138, 68, 86))
        self.bp = f"{r.randint(b[0], b[1])}/{r.randint(b[2], b[3])}"
        self.hr = r.randint(*c.get("hr", (58, 96)))
        t = c.get("temp", (36.3, 37.2))
        self.temp = f"{r.uniform(*t):.1f}"
        self.spo2 = r.randint(*c.get("spo2", (96, 99)))
        self.weight = r.randint(52, 112)
        self.rr = r.randint(12, 20)

    def details(self, k: int, first_person: bool = False) -> list[str]:
        """k free-text details (severity, remedies tried, impact, worries, regular medicines, contacts...)."""
        out = []
        for third, first in self.extras[:k]:
            out.append(cap(first if first_person else third) + ".")
        del self.extras[:k]
        return out

    def fill(self, s: str) -> str:
        return s.format(self.r.randint(3, 12)) if "{}" in s else s

    def pick(self, *opts):
        return self.r.choice(opts)

    def date_text(self, d: date) -> str:
        return self.pick(d.isoformat(), d.strftime("%B %-d, %Y"), d.strftime("%m/%d/%Y"), d.strftime("%-d %b %Y"))

    def lst(self, items: list[str]) -> str:
        items = list(items)
        if len(items) == 1:
            return items[0]
        return ", ".join(items[:-1]) + self.pick(" and ", ", and ", " plus ") + items[-1]

    def vitals(self) -> str:
        parts = [
            self.pick(f"BP {self.bp}", f"blood pressure {self.bp} mmHg", f"BP {self.bp} mmHg"),
            self.pick(f"HR {self.hr}", f"pulse {self.hr}", f"heart rate {self.hr}/min"),
            self.pick(f"T {self.temp}", f"temp {self.temp} C", f"temperature {self.temp}"),
            self.pick(f"SpO2 {self.spo2}%", f"sats {self.spo2}% on air", f"O2 saturation {self.spo2}%"),
            self.pick(f"RR {self.rr}", f"weight {self.weight} kg", f"resp rate {self.rr}"),
        ]
        self.r.shuffle(parts)
        return ", ".join(parts[: self.r.randint(3, 5)])

    def social(self, first_person: bool = False) -> list[str]:
        if first_person:
            fp = [
                ("ex-smoker", "I'm an ex-smoker"),
                ("never smoked", "I've never smoked"),
                ("smokes", "I smoke"),
                ("vapes", "I vape"),
                ("non-smoker", "I don't smoke"),
                ("drinks", "I drink"),
                ("teetotal", "I'm teetotal"),
                ("a glass of wine", "I have a glass of wine"),
                ("rarely drinks", "I rarely drink"),
                ("lives", "I live"),
            ]
            s = [self.smoke, self.alcohol, self.living]
            for a, b in fp:
                s = [x.replace(a, b, 1) if x.startswith(a) else x for x in s]
            s.append(self.pick(f"I work as a {self.job}", f"my job is {self.job}"))
        else:
            s = [
                self.smoke,
                self.alcohol,
                self.pick(f"works as a {self.job}", f"job: {self.job}", f"occupation: {self.job}"),
                self.living,
            ]
        self.r.shuffle(s)
        return s[: self.r.randint(2, 4)]

    def pii_line(self) -> str:
        """A header with the identifiers in a random order and labelling."""
        f = [
            self.pick(f"Patient: {self.name}", f"Name: {self.name}", f"Pt {self.name}", f"RE: {self.name}", self.name),
            self.pick(f"DOB {self.dob}", f"D.O.B.: {self.dob}", f"born {self.dob}", f"date of birth {self.dob}"),
            self.pick(f"{self.mrn}", f"record {self.mrn}", f"chart {self.mrn}", f"ID {self.mrn}"),
            self.pick(f"tel {self.phone}", f"phone {self.phone}", f"mobile {self.phone}", f"ph. {self.phone}"),
            self.pick(f"email {self.email}", f"e-mail: {self.email}", f"{self.email}", f"contact {self.email}"),
        ]
        head, rest = f[0], f[1:]
        self.r.shuffle(rest)
        sep = self.pick("; ", " | ", ", ", "\n")
        if sep == "\n" and self.r.random() < 0.5:
            return head + "\n" + " · ".join(rest)
        return sep.join([head] + rest)


# --------------------------------------------------------------------------- formats


def fmt_dialog(v: Visit) -> str:
    r = v.r
    dn, pn = r.choice(
        [
            ("Doctor", "Patient"),
            (v.doctor, v.first),
            ("Dr", "Pt"),
            ("Physician", v.name),
            ("Clinician", "Patient"),
            (v.doctor.replace("Dr. ", ""), v.first),
        ]
    )
    lines = []
    lines.append(
        v.pick(
            f"{dn}: Hello {v.first}, come in. What brings you here today?",
            f"{dn}: Good morning. How can I help?",
            f"{dn}: Hi, have a seat. What's been going on?",
            f"{dn}: Nice to see you again, {v.first}. What's the trouble?",
        )
    )
    s = v.lst(v.sx)
    lines.append(
        v.pick(
            f"{pn}: I've had {s} {v.duration}.",
            f"{pn}: Well, {v.duration} I've been getting {s}.",
            f"{pn}: It's {s}. Been going on {v.duration}, honestly.",
            f"{pn}: Mainly {s}, {v.duration} now. {v.onset}".strip(),
        )
    )
    extra = [
        v.pick(f"{dn}: Anything that makes it worse?", f"{dn}: Have you noticed a pattern?", f"{dn}: Any triggers?")
        + "\n"
        + v.pick(
            f"{pn}: Hmm, {v.trig}, I think.",
            f"{pn}: Not sure. Maybe relevant: {v.trig}.",
            f"{pn}: My partner pointed out {v.trig}.",
        ),
        v.pick(f"{dn}: Any medical problems in the past?", f"{dn}: Past history?")
        + "\n"
        + v.pick(f"{pn}: Just {v.pmh}. Family-wise, {v.family}.", f"{pn}: {cap(v.pmh)}, nothing else. Oh, {v.family}."),
        v.pick(f"{dn}: Allergies to any medicines?", f"{dn}: Are you allergic to anything?")
        + "\n"
        + v.pick(f"{pn}: {cap(v.allergy)}.", f"{pn}: Only {v.allergy}, as far as I know."),
        v.pick(f"{dn}: Do you smoke or drink?", f"{dn}: Tell me about work and home.")
        + "\n"
        + f"{pn}: "
        + cap("; ".join(v.social(first_person=True)))
        + ".",
    ]
    extra += [f"{pn}: {d}" for d in v.details(r.randint(1, 3), first_person=True)]
    r.shuffle(extra)
    lines += extra[: r.randint(3, 5)]
    lines.append(
        v.pick(
            f"{dn}: Your readings today are {v.vitals()}. On examination I find {v.lst(v.exam)}.",
            f"{dn}: I examined you and there's {v.lst(v.exam)}; vitals {v.vitals()}.",
            f"{dn}: Let me check. {cap(v.lst(v.exam))}. And the results show {v.lst(v.tests)}.",
        )
    )
    lines.append(
        v.pick(
            f"{dn}: Putting it together, this looks like {v.cond['dx']}.",
            f"{dn}: I'm fairly confident it's {v.cond['dx']}.",
            f"{dn}: The picture fits {v.cond['dx']}, {v.first}.",
        )
    )
    if r.random() < 0.5:
        lines.append(
            v.pick(
                f"{pn}: Is it serious? What do I take?",
                f"{pn}: Okay... what's the treatment?",
                f"{pn}: Right. So what now?",
            )
        )
    lines.append(
        v.pick(
            f"{dn}: I'd like you to start {v.med}. Also: {v.lst(v.adv)}.",
            f"{dn}: Let's begin {v.med}. My advice: {v.lst(v.adv)}.",
            f"{dn}: Plan is {v.med}; one more thing: {v.adv[0]}.",
        )
    )
    lines.append(
        v.pick(
            f"{dn}: Come straight back if you get {v.red}.",
            f"{dn}: If there's {v.red}, go to the ER.",
            f"{dn}: Watch out for {v.red}.",
        )
    )
    lines.append(
        v.pick(
            f"{pn}: Best number is {v.phone}, or email {v.email}.",
            f"{pn}: Can you text me at {v.phone}? My email is {v.email}.",
            f"{pn}: Send results to {v.email}; phone is {v.phone}.",
        )
    )
    head = v.pick(
        f"Consultation {v.date_text(v.visit)} — {v.name} (DOB {v.dob}), {v.mrn}",
        f"{v.mrn} | {v.name} | born {v.dob} | seen by {v.doctor}",
        f"Transcript, {v.clinic}. Patient {v.name}, date of birth {v.dob}, chart {v.mrn}.",
    )
    return head + "\n" + "\n".join(lines)


def fmt_soap(v: Visit) -> str:
    r = v.r
    lab = r.choice(
        [
            ("S:", "O:", "A:", "P:"),
            ("Subjective:", "Objective:", "Assessment:", "Plan:"),
            ("SUBJ", "OBJ", "IMP", "PLAN"),
            ("History —", "Exam —", "Impression —", "Management —"),
        ]
    )
    hist = [
        v.pick(
            f"{v.age}yo {'F' if v.sex == 'F' else 'M'} c/o {v.lst(v.sx)} {v.duration}.",
            f"{v.age}-year-old {'woman' if v.sex == 'F' else 'man'} reporting {v.lst(v.sx)} {v.duration}.",
            f"Presents with {v.lst(v.sx)}, {v.duration}.",
        )
    ]
    opt = [
        cap(v.trig) + ".",
        v.onset,
        f"PMH: {v.pmh}.",
        f"FHx: {v.family}.",
        f"SHx: {'; '.join(v.social())}.",
        v.pick(f"Allergies: {v.allergy}.", f"Allergy status: {v.allergy}."),
    ]
    opt += v.details(r.randint(1, 3))
    r.shuffle(opt)
    hist += [o for o in opt[: r.randint(3, 7)] if o]
    obj = [
        v.pick(f"Vitals {v.vitals()}.", f"{v.vitals()}."),
        cap(v.lst(v.exam)) + ".",
        v.pick("Results: ", "Ix: ", "Labs/imaging: ") + v.lst(v.tests) + ".",
    ]
    if r.random() < 0.5:
        obj[1], obj[2] = obj[2], obj[1]
    ass = v.pick(f"Dx: {v.cond['dx']}.", f"Likely {v.cond['dx']}.", f"Findings consistent with {v.cond['dx']}.")
    plan = [
        v.pick(f"Start {v.med}.", f"Rx {v.med}.", f"Commenced on {v.med}."),
        v.pick("Advised: ", "Counselled: ", "Discussed: ") + v.lst(v.adv) + ".",
        v.pick(f"Safety-net: {v.red}.", f"Return if {v.red}.", f"Red flags given ({v.red})."),
        v.pick(f"Review in {v.weeks} wk.", f"F/u {v.fu_text}.", f"Follow-up booked for {v.fu_text}."),
    ]
    head = v.pii_line()
    tail = v.pick(
        f"— {v.doctor}, {v.date_text(v.visit)}",
        f"Signed {v.doctor} ({v.clinic})",
        f"{v.doctor} / {v.date_text(v.visit)}",
    )
    return "\n".join(
        [
            head,
            f"{lab[0]} " + " ".join(hist),
            f"{lab[1]} " + " ".join(obj),
            f"{lab[2]} {ass}",
            f"{lab[3]} " + " ".join(plan),
            tail,
        ]
    )


def fmt_referral(v: Visit) -> str:
    r = v.r
    spec = r.choice(["colleague", "Doctor"])
    to = f"Dr. {r.choice(['Okafor', 'Lindqvist', 'Ramirez', 'Chen', 'Haddad', 'Novak', 'Brennan', 'Iyer', 'Moreau'])}"
    body = [
        v.pick(
            f"Dear {to},",
            f"Dear {spec},",
            f"To {to}, {r.choice(['cardiology', 'medical', 'outpatient', 'specialist'])} clinic:",
        ),
        v.pick(
            f"I would be grateful if you could see {v.name} ({v.dob}), a {v.age}-year-old {v.job}, "
            f"with {v.cond['dx']}.",
            f"Thank you for seeing this {v.age}-year-old {'lady' if v.sex == 'F' else 'gentleman'}, "
            f"{v.name}, born {v.dob}, whom I believe has {v.cond['dx']}.",
            f"Re: {v.name}, DOB {v.dob}. I am referring {v.him} for your opinion on {v.cond['dx']}.",
        ),
    ]
    mid = [
        v.pick(
            f"{cap(v.he)} describes {v.lst(v.sx)} {v.duration}, {v.trig}.",
            f"The story is of {v.lst(v.sx)} {v.duration}; {v.trig}.",
        ),
        v.pick(f"On examination: {v.lst(v.exam)}.", f"I found {v.lst(v.exam)}."),
        v.pick(f"Investigations so far: {v.lst(v.tests)}.", f"Bloods and tests showed {v.lst(v.tests)}."),
        v.pick(f"Background of {v.pmh}; {v.family}.", f"Past history: {v.pmh}. {cap(v.family)}."),
        v.pick(
            f"{cap(v.he)} {v.smoke.replace('never', 'has never').replace('smokes', 'smokes')}, and {v.living}.",
            f"Socially, {v.he} {v.living}.",
        ),
        v.pick(f"Allergies: {v.allergy}.", f"Note {v.allergy}."),
    ] + v.details(r.randint(1, 2))
    r.shuffle(mid)
    body += mid[: r.randint(4, 7)]
    body.append(
        v.pick(
            f"I have started {v.med} in the meantime.",
            f"{cap(v.he)} is now on {v.med}.",
            f"Current treatment: {v.med}.",
        )
    )
    body.append(
        v.pick(
            f"{cap(v.he)} can be reached on {v.phone} or at {v.email}; hospital number {v.mrn}.",
            f"Contact: {v.phone}, {v.email}. Our ref {v.mrn}.",
            f"Please send the appointment to {v.address} (tel {v.phone}, {v.email}). {v.mrn}.",
        )
    )
    body.append(
        v.pick(
            f"Yours sincerely,\n{v.doctor}, {v.clinic}",
            f"Kind regards, {v.doc_first} {v.doctor[4:]}",
            f"Many thanks,\n{v.doctor}\n{v.date_text(v.visit)}",
        )
    )
    return "\n".join(body)


def fmt_phone(v: Visit) -> str:
    r = v.r
    head = v.pick(
        f"Telephone encounter {v.date_text(v.visit)}. Caller: {v.name}, DOB {v.dob}, {v.mrn}.",
        f"PHONE NOTE — {v.name} ({v.mrn}), born {v.dob}",
        f"Call log, {v.clinic}. {v.mrn}; pt {v.name}; D.O.B. {v.dob}.",
    )
    parts = [
        v.pick(
            f"Pt rang about {v.lst(v.sx)} {v.duration}.",
            f"{v.first} phoned reporting {v.lst(v.sx)}, {v.duration}.",
            f'Called in: "I\'ve had {v.lst(v.sx)} {v.duration}, please call me at {v.phone}."',
        ),
        v.pick(f"Of note: {v.trig}.", f"Pattern: {v.trig}.", f"({cap(v.trig)}.)"),
        v.pick(f"Recent results reviewed with {v.him}: {v.lst(v.tests)}.", f"Discussed results: {v.lst(v.tests)}."),
        v.pick(f"Allergy check: {v.allergy}.", f"Confirmed {v.allergy}."),
    ] + v.details(r.randint(1, 3))
    r.shuffle(parts)
    parts = parts[: r.randint(3, 6)]
    if r.random() < 0.5:
        parts.append(f"History of {v.pmh}; {', '.join(v.social())}.")
    parts.append(
        v.pick(
            f"Impression {v.cond['dx']}.", f"Likely {v.cond['dx']} — discussed.", f"Working diagnosis: {v.cond['dx']}."
        )
    )
    parts.append(v.pick(f"e-Prescribed {v.med} to the usual pharmacy.", f"Agreed plan: {v.med}.", f"Rx sent: {v.med}."))
    parts.append(v.pick(f"Advised {v.lst(v.adv)}.", f"Also advised: {v.adv[0]}."))
    parts.append(v.pick(f"If any {v.red}, attend urgent care.", f"Told to call 911 for {v.red}."))
    parts.append(
        v.pick(
            f"Callback number {v.phone}; summary emailed to {v.email}.",
            f"Best contact {v.phone} (after 5pm). Email {v.email}.",
            f"Patient asked us to write to {v.email}, or ring {v.phone}.",
        )
    )
    parts.append(
        v.pick(
            f"Appointment in {v.fu_text}. {v.doctor}",
            f"Review {v.weeks}/52. — {v.doctor}",
            f"{v.doctor}, call {r.randint(3, 14)} min.",
        )
    )
    return head + "\n" + " ".join(parts)


def fmt_discharge(v: Visit) -> str:
    r = v.r
    adm = v.visit - timedelta(days=r.randint(0, 4))
    unit = r.choice(["Emergency Department", "Acute Medical Unit", "Observation Unit", "Urgent Care Center"])
    head = [
        v.pick(f"DISCHARGE SUMMARY — {unit}", f"{unit} discharge letter", f"Discharge note ({unit})"),
        v.pii_line(),
        v.pick(
            f"Admitted {v.date_text(adm)}; discharged {v.date_text(v.visit)}.",
            f"Seen {v.date_text(adm)}, home {v.date_text(v.visit)}.",
        ),
    ]
    body = [
        v.pick(f"Presenting complaint: {v.lst(v.sx)} {v.duration}.", f"Came in with {v.lst(v.sx)}. {v.onset}".strip()),
        v.pick(f"Observations on arrival: {v.vitals()}.", f"Obs {v.vitals()}."),
        v.pick(f"Exam: {v.lst(v.exam)}.", f"Clinical findings — {v.lst(v.exam)}."),
        v.pick(f"Key results: {v.lst(v.tests)}.", f"Investigations: {v.lst(v.tests)}."),
        v.pick(f"Comorbidities: {v.pmh}.", f"Background {v.pmh}; {v.smoke}."),
    ] + v.details(r.randint(1, 2))
    r.shuffle(body)
    body = body[: r.randint(3, 6)]
    body += [
        v.pick(f"Discharge diagnosis: {v.cond['dx']}.", f"Final diagnosis — {v.cond['dx']}."),
        v.pick(f"Medications on discharge: {v.med}.", f"TTO: {v.med}.", f"Go home on {v.med}."),
        v.pick(f"Allergies {v.allergy}.", f"Allergy: {v.allergy}."),
        v.pick(f"GP to arrange review in {v.fu_text}.", f"Follow-up with {v.doctor} at {v.clinic} in {v.fu_text}."),
        v.pick(f"Return if {v.red}.", f"Given advice about {v.red}; also advised: {v.adv[0]}."),
    ]
    return "\n".join(head) + "\n" + " ".join(body)


def fmt_portal(v: Visit) -> str:
    r = v.r
    msg = [
        v.pick(f"From: {v.email}", f"Message from {v.name} <{v.email}>", f"Sender: {v.email}"),
        v.pick(f"Subject: {v.lst(v.sx[:2])}", f"Subject: question for {v.doctor}", "Subject: advice please"),
    ]
    pt = [
        v.pick(
            f"Hi {v.doctor}, I've been dealing with {v.lst(v.sx)} {v.duration}.",
            f"Hello, sorry to bother you. I've had {v.lst(v.sx)} {v.duration}.",
            f"Dear doctor, quick question - {v.lst(v.sx)}, {v.duration}.",
        )
    ]
    pt.append(v.pick(f"Possibly relevant: {v.trig}.", f"(Maybe {v.trig}?)", ""))
    pt += v.details(r.randint(0, 2), first_person=True)
    pt.append(
        v.pick(
            f"My date of birth is {v.dob} and my chart number is {v.mrn}.",
            f"(DOB {v.dob}, {v.mrn})",
            f"Born {v.dob}, record {v.mrn}, in case you need it.",
        )
    )
    pt.append(v.pick(f"You can call me at {v.phone}.", f"Phone: {v.phone}.", f"Cell {v.phone} if easier."))
    pt.append(v.pick(f"Thanks, {v.name}", f"- {v.name}", f"Best, {v.name}"))
    reply = [
        v.pick(
            f"Reply from {v.doctor}, {v.date_text(v.visit)}:",
            f"{v.doctor} wrote:",
            "Clinician response:",
            f"{v.doctor} ({v.clinic}) replied on {v.date_text(v.visit)}:",
        ),
        v.pick(
            f"Thanks {v.first}. Your results show {v.lst(v.tests)}.",
            f"Hi {v.first}, I looked at your tests: {v.lst(v.tests)}.",
            f"Dear {v.first}, the exam last week found {v.lst(v.exam)}.",
            f"{v.first} - good news, the bloods are back.",
            f"Thank you for the message. When I saw you, there was {v.lst(v.exam)}.",
        ),
    ]
    core = [
        v.pick(
            f"This is in keeping with {v.cond['dx']}.",
            f"I think this is {v.cond['dx']}.",
            f"The most likely explanation is {v.cond['dx']}.",
            f"Everything points to {v.cond['dx']}.",
            f"Diagnosis: {v.cond['dx']}.",
        ),
        v.pick(
            f"I've sent {v.med} to your pharmacy.",
            f"Please pick up {v.med}.",
            f"We'll treat with {v.med}.",
            f"A prescription for {v.med} is ready.",
            f"Best option is {v.med}.",
        ),
    ]
    if r.random() < 0.5:
        core.reverse()
    more = [
        v.pick(f"Your chart lists {v.allergy}.", f"(Allergies on file: {v.allergy}.)", ""),
        v.pick(f"Advice: {v.lst(v.adv)}.", f"Tip: {v.adv[0]}.", f"My advice: {v.adv[-1]}.", ""),
        v.pick(
            f"If you notice {v.red}, go to the emergency room.",
            f"Seek urgent help for {v.red}.",
            f"Red flag: {v.red} - call 911.",
        ),
    ]
    r.shuffle(more)
    reply += (
        core
        + more
        + [
            v.pick(
                f"Let's book a visit in {v.fu_text}.",
                f"See you in {v.fu_text}.",
                f"The front desk will arrange a review in {v.fu_text}.",
                "",
            )
        ]
    )
    return "\n".join(msg) + "\n" + " ".join(p for p in pt if p) + "\n" + " ".join(p for p in reply if p)


def fmt_progress(v: Visit) -> str:
    r = v.r
    head = v.pick(
        f"{v.clinic} — progress note, {v.date_text(v.visit)}",
        f"Follow-up visit with {v.doctor}",
        f"Clinic note {v.date_text(v.visit)}",
    )
    s = [
        v.pick(
            f"{v.name} ({v.mrn}; born {v.dob}) returns {v.pick('today', 'for review', 'as planned')}.",
            f"Reviewed {v.name}, date of birth {v.dob}, hospital no. {v.mrn}.",
        ),
        v.pick(f"{cap(v.he)} has had {v.lst(v.sx)} {v.duration}.", f"Ongoing {v.lst(v.sx)} {v.duration}, {v.trig}."),
    ]
    opt = [
        v.pick(f"{cap(v.his)} history includes {v.pmh}.", f"Known {v.pmh}."),
        v.pick(f"{cap(v.family)}.", f"Family: {v.family}."),
        f"{cap(v.he)} {v.living} and "
        f"{v.smoke.replace('smokes', 'smokes').replace('never smoked', 'has never smoked')}.",
        v.pick(f"Today {v.vitals()}.", f"Measured {v.vitals()}."),
        v.pick(f"Examination showed {v.lst(v.exam)}.", f"Exam: {v.lst(v.exam)}."),
        v.pick(f"Results: {v.lst(v.tests)}.", f"{cap(v.lst(v.tests))}."),
        v.pick(
            f"Allergic to {v.allergy}."
            if "know" not in v.allergy and v.allergy not in ("NKDA", "none known")
            else f"Allergies: {v.allergy}.",
            f"Allergy list: {v.allergy}.",
        ),
    ] + v.details(r.randint(1, 3))
    r.shuffle(opt)
    s += opt[: r.randint(3, 7)]
    s.append(
        v.pick(f"Diagnosis remains {v.cond['dx']}.", f"I think this is {v.cond['dx']}.", f"Impression: {v.cond['dx']}.")
    )
    s.append(
        v.pick(f"We agreed on {v.med}", f"Continuing {v.med}", f"Switched to {v.med}")
        + v.pick(f"; advice given: {v.lst(v.adv)}.", f"; advised {v.adv[0]}.", ".")
    )
    s.append(v.pick(f"Red flags discussed ({v.red}).", f"To seek care for {v.red}."))
    s.append(
        v.pick(
            f"Contact details checked: {v.phone}, {v.email}.",
            f"Prefers updates by email ({v.email}); tel {v.phone}.",
            f"Address {v.address}; phone {v.phone}; {v.email}.",
        )
    )
    s.append(v.pick(f"Next visit in {v.fu_text}.", f"Recall {v.fu_text}. {v.doctor}"))
    return head + "\n" + " ".join(s)


FORMATS = [fmt_dialog, fmt_soap, fmt_referral, fmt_phone, fmt_discharge, fmt_portal, fmt_progress]


def generate(seed: int = SEED, n: int = N_RECORDS) -> list[dict]:
    from faker import Faker

    fk = Faker("en_US")
    fk.seed_instance(seed)
    rng = random.Random(seed)
    records = []
    emails: set[str] = set()
    for i in range(1, n + 1):
        while True:
            v = Visit(rng, fk, i)
            if v.email in emails:
                continue
            fmt = FORMATS[(i - 1) % len(FORMATS)] if i <= len(FORMATS) else rng.choice(FORMATS)
            text = fmt(v).strip()
            words = len(text.split())
            if MIN_WORDS <= words <= MAX_WORDS and all(x in text for x in (v.name, v.dob, v.phone, v.email, v.mrn)):
                break
        emails.add(v.email)
        records.append(
            {
                "id": f"rec-{i:04d}",
                "text": text,
                "name": v.name,
                "dob": v.dob,
                "email": v.email,
                "phone": v.phone,
                "mrn": v.mrn,
                "visit_date": v.visit.isoformat(),
                "doctor": v.doctor,
                "diagnosis": v.cond["dx"],
                "medication": v.med,
                "allergies": v.allergy,
                "address": v.address,
                "format": fmt.__name__[4:],
            }
        )
    return records


def render(records: list[dict]) -> str:
    return "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--check", action="store_true", help="compare with the committed file instead of writing")
    ap.add_argument("--held-out", type=int, default=0, help="write N more records to the held-out corpus instead")
    args = ap.parse_args()
    if args.held_out:
        out = HERE.parent / "clinic_records_heldout" / "part_records.jsonl"
        out.parent.mkdir(exist_ok=True)
        return _write(out, render(generate(n=N_RECORDS + args.held_out)[N_RECORDS:]), args.check)
    return _write(OUT, render(generate()), args.check)


def _write(out: Path, content: str, check: bool) -> int:
    """Write ``content`` to ``out``, or with ``check`` compare them (exit code 1 when they differ)."""
    if check:
        same = out.is_file() and out.read_text(encoding="utf-8") == content
        print("up to date" if same else "differs from the generator output")
        return 0 if same else 1
    out.write_text(content, encoding="utf-8")
    print(f"wrote {out} ({content.count(chr(10))} records)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
