# Build Confab for Windows: PyInstaller one-folder build, then the Inno Setup installer.
#
#   powershell -ExecutionPolicy Bypass -File packaging\build_windows.ps1
#
# Outputs: build\dist\confab\confab.exe, build\Confab-<version>-setup.exe
# Needs: a Python 3.11+ venv in .venv with the app installed; Inno Setup 6
# (winget install JRSoftware.InnoSetup). PyInstaller is installed here, into .venv (build tool only).
# Signing (not done here): signtool sign /fd sha256 /tr <timestamp URL> /td sha256 /a on confab.exe
# before running ISCC, and on the setup .exe after, keeps SmartScreen from warning users.
$ErrorActionPreference = "Stop"
$Root = Resolve-Path (Join-Path $PSScriptRoot "..")
Set-Location $Root
$Py = Join-Path $Root ".venv\Scripts\python.exe"

& $Py -m PyInstaller --version *> $null
if ($LASTEXITCODE -ne 0) { & $Py -m pip install --quiet pyinstaller }
$Version = & $Py -c "import sys; sys.path.insert(0, 'packaging'); import build_info; print(build_info.version())"

Write-Host "== llama.cpp for the installer (portable CPU build, cached in build\llama-portable)"
$env:CONFAB_LLAMA_DIR = & $Py packaging\build_llama.py
if ($LASTEXITCODE -ne 0) { throw "llama-cpp-python did not build (Visual Studio's C++ build tools and CMake needed)" }

Write-Host "== PyInstaller: Confab $Version"
& $Py -m PyInstaller --noconfirm --log-level WARN --distpath build\dist --workpath build\work packaging\confab.spec
if ($LASTEXITCODE -ne 0) { throw "PyInstaller failed" }

Write-Host "== self-test of the frozen app"
$Log = Join-Path $Root "build\self-test.log"
$Test = Start-Process -FilePath "build\dist\confab\confab.exe" -ArgumentList "--self-test" `
    -Wait -PassThru -NoNewWindow -RedirectStandardOutput $Log
Get-Content $Log
if ($Test.ExitCode -ne 0) { throw "self-test failed ($($Test.ExitCode))" }

Write-Host "== Inno Setup"
$Iscc = Join-Path ${env:ProgramFiles(x86)} "Inno Setup 6\ISCC.exe"
if (-not (Test-Path $Iscc)) {
    $Found = Get-Command ISCC.exe -ErrorAction SilentlyContinue
    if (-not $Found) { throw "Inno Setup 6 is missing: winget install JRSoftware.InnoSetup" }
    $Iscc = $Found.Source
}
& $Iscc "/DAppVersion=$Version" "packaging\windows\confab.iss"
if ($LASTEXITCODE -ne 0) { throw "ISCC failed" }
Get-Item "build\Confab-$Version-setup.exe" | ForEach-Object { Write-Host "built $($_.FullName) ($([math]::Round($_.Length / 1MB)) MB)" }
